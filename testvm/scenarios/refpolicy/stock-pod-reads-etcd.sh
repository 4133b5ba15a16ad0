# boot: refpolicy
# pod: s0:c1,c2 /var:/host/var:rw
# expect: allow:etcd-db-v1
# policy: refpolicy-stock
#
# Control: with Debian's store as shipped, a hostPath pod reads etcd's
# data (container.fc labels /var/lib/etcd container_file_t).
head -n1 /host/var/lib/etcd/member/snap/db
