# boot: enforcing
# expect: rc=0
#
# The control's disk (the fourth, an ext4 like the third) with the
# default layout: the same tree, no limit on /var/mnt.
cap_disk /dev/vdd /capctl ext4
out=$(as_system semanifest apply --root /capctl 2>&1 >/dev/null); rc=$?
flat "$out"
[ "rc=$rc" = "$expected" ] && ok=yes || ok=no
report $ok "rc=$rc${flat:+: $flat}"
