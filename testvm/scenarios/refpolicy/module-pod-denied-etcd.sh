# boot: refpolicy
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:etcd_var_t
# policy: refpolicy-module
#
# With the layout's module installed in the same store, the same pod is
# denied etcd's data, with the AVC on etcd_var_t.
cat /host/var/lib/etcd/member/snap/db
