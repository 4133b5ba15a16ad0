# boot: systemd
# expect: nodev,nosuid,noexec; EACCES; no drift on /var/mnt
# control: layout-units-off
#
# The image's layout mounts /var/mnt with `options: [nodev, nosuid,
# noexec]`: its mount unit binds it onto itself with those flags before
# the runtime starts. A binary placed there cannot be executed (EACCES
# from the kernel's noexec, not from SELinux: the scenario runs in
# init_t), and `apply --check` finds the live flags as the layout wants
# them (it reports no drift on /var/mnt; drift elsewhere is other
# scenarios' business). The control is mountopts/control/exec-elsewhere.
opts=$(awk '$5 == "/var/mnt" { print $6 }' /proc/self/mountinfo | tail -n1)
flags=
for flag in nodev nosuid noexec; do
    case ",$opts," in *",$flag,"*) flags="$flags,$flag" ;; esac
done
flags=${flags#,}
cp /bin/true /var/mnt/testvm-exec && chmod 0755 /var/mnt/testvm-exec
out=$(/var/mnt/testvm-exec 2>&1); rc=$?
case "$rc $out" in
    0\ *) exec_result=ran ;;
    *"Permission denied"*) exec_result=EACCES ;;
    *) exec_result="rc=$rc $out" ;;
esac
rm -f /var/mnt/testvm-exec
# apply as its boot unit runs it (the layout, the image's symlinks kept).
unit=$(systemctl show -P FragmentPath semanifest-apply.service)
apply=$(sed -n 's/^ExecStart=-\{0,1\}//p' "$unit" | head -n1)
# shellcheck disable=SC2086 # the unit's command line, split as systemd does
check_out=$($apply --check 2>&1); check=$?
drift=$(echo "$check_out" | grep "^drift /var/mnt" | tr '\n' ' ')
case "$check" in
    0|1) check="${drift:+drift: $drift}" ;;
    *) check="check rc=$check" ;;
esac
got="${flags:-no flags}; $exec_result; ${check:-no drift on /var/mnt}"
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got (mount options: ${opts:-not mounted})"
