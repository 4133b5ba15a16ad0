# boot: refpolicy
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:etcd_var_t
# policy: refpolicy-module
#
# With the layout's module installed, the pod cannot list etcd's data.
ls /host/var/lib/etcd/member/snap
