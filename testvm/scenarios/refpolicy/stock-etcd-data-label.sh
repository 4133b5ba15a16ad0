# boot: refpolicy
# expect: container_file_t
# policy: refpolicy-stock
#
# Control: Debian's store as shipped labels etcd's data container_file_t
# (its container.fc), a type any hostPath pod may read.
got=$(label_of /var/lib/etcd/member/snap/db)
case $got in *:object_r:$expected:*) ok=yes ;; *) ok=no ;; esac
report $ok "${got:-no label}"
