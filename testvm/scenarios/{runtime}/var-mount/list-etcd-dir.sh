# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:etcd_var_t
# control: leaky
#
# A pod with all of /var mounted cannot list etcd's directory.
ls /host/var/lib/etcd
