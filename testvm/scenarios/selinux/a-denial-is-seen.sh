# boot: systemd
# expect: denied, with AVC
#
# The control for selinux/no-other-denial: a process in the pod domain
# reading etcd's data is denied, and the kernel logs the AVC. kauditd
# prints the AVC from a kernel thread, a moment after the denial.
runcon -t container_t -- ls /var/lib/etcd >/dev/null 2>&1 && denied=no || denied=yes
tries=0
while :; do
    probe=$(dmesg | grep -F 'avc:' | grep -c 'scontext=system_u:system_r:container_t:.* tcontext=system_u:object_r:etcd_var_t:')
    [ "$probe" -gt 0 ] || [ "$tries" -ge 20 ] && break
    sleep 0.2
    tries=$((tries + 1))
done
ok=no
[ "$denied" = yes ] && [ "$probe" -gt 0 ] && ok=yes
report $ok "denied=$denied, $probe AVC"
