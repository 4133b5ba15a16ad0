# boot: enforcing
# pod: s0:c1,c2 /var/lib/etcd:/host/etcd:rw
# expect: allow:etcd-db-v1
# selinux: permissive
#
# Control: in permissive mode the same pod reads etcd's data, so the
# denials of {runtime}/etcd-mount/* come from the policy and not from the
# set-up.
head -n1 /host/etcd/member/snap/db
