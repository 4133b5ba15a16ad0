# boot: refpolicy
# pod: s0:c1,c2 /var:/host/var:rw
# expect: allow:db
# policy: refpolicy-stock
#
# Control: with Debian's store as shipped, a hostPath pod lists etcd's data.
ls /host/var/lib/etcd/member/snap
