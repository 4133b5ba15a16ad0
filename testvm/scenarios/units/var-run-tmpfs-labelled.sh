# boot: systemd
# expect: tmpfs with the layout's /var/run context
#
# Debian's /var/run is a symlink to /run; apply keeps it (--keep-symlink),
# no mount unit applies to it, and /run is labelled through the
# `/run /var/run` equivalence. systemd itself labels /run when it mounts
# it, from the installed file_contexts, so this holds without the
# layout's units too: the control does not judge it.
read -r want </usr/lib/testvm/var-run
expected="tmpfs $want"
link=$(readlink /var/run)
fs=$(stat -L -f -c %T /var/run)
label=$(stat -L -c %C /var/run)
ok=no
[ "$fs" = tmpfs ] && [ "$label" = "$want" ] && ok=yes
report $ok "/var/run -> $link, $fs, $label"
