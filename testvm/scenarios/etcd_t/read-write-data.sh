# boot: enforcing
# expect: allowed
#
# etcd is a host daemon: started by the OS (trusted) in its own domain, as
# a service manager would, it reads and writes its data.
db=/var/lib/etcd/member/snap/db
host_check system_u:system_r:etcd_t:s0 "etcd-db-v1 etcd-db-v2" \
    "cat $db && echo etcd-db-v2 >>$db && tail -n1 $db"
