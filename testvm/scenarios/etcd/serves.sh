# boot: cri
# expect: etcd_t, a key put then read back
#
# Debian's etcd, started by systemd from /usr/bin/etcd (etcd_exec_t), runs
# in etcd_t and serves its API: a key put with etcdctl comes back. The key
# stays for agents/etcd-serves-after-all, which runs last.
pid=$(systemctl show --value -p MainPID etcd.service)
context=$(tr -d '\000' <"/proc/$pid/attr/current" 2>&1)
put=$(etcdctl put testvm/before-the-pods written-at-boot 2>&1)
got=$(etcdctl get --print-value-only testvm/before-the-pods 2>&1)
ok=no
case $context in
    system_u:system_r:etcd_t:*) [ "$put" = OK ] && [ "$got" = written-at-boot ] && ok=yes ;;
esac
report $ok "etcd ($pid) in $context; put: $put; get: $got"
