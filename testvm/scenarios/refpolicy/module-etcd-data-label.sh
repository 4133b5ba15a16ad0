# boot: refpolicy
# expect: etcd_var_t
# policy: refpolicy-module
#
# With the layout's module installed by semodule, the store's own
# file_contexts give etcd's data etcd_var_t.
got=$(label_of /var/lib/etcd/member/snap/db)
case $got in *:object_r:$expected:*) ok=yes ;; *) ok=no ;; esac
report $ok "${got:-no label}"
