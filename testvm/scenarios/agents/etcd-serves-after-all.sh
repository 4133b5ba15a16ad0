# boot: cri
# expect: the same etcd, the key put before the pods
# needs: etcd/serves
# after: *
#
# Last of the boot, after every pod and agent tried etcd's data: etcd is
# the same process, still in etcd_t, and returns what was put before.
pid=$(systemctl show --value -p MainPID etcd.service)
context=$(tr -d '\000' <"/proc/$pid/attr/current" 2>&1)
got=$(etcdctl get --print-value-only testvm/before-the-pods 2>&1)
state=$(systemctl show --value -p NRestarts etcd.service)
ok=no
case $context in
    system_u:system_r:etcd_t:*) [ "$got" = written-at-boot ] && [ "$state" = 0 ] && ok=yes ;;
esac
report $ok "etcd ($pid) in $context, $state restarts; get: $got"
