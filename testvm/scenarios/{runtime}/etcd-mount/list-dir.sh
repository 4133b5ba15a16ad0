# boot: enforcing
# pod: s0:c1,c2 /var/lib/etcd:/host/etcd:rw
# expect: deny:etcd_var_t
# control: leaky
#
# A pod with etcd's data directory as its hostPath volume cannot list it.
ls /host/etcd
