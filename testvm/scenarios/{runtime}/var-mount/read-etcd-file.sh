# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:etcd_var_t
# control: leaky
#
# A pod with all of /var as its hostPath volume cannot read etcd's data.
cat /host/var/lib/etcd/member/snap/db
