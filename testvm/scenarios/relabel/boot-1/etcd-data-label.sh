# boot: enforcing
# expect: system_u:object_r:etcd_var_t:s0
#
# The disk is built with etcd's data mislabelled var_mnt_t, a type pods
# may write: only the boot's relabel (guest/suite, start_semanifest)
# stands between a pod and that file.
[ "$etcd_label_after" = "$expected" ] && ok=yes || ok=no
report $ok "${etcd_label_before:-no label} -> ${etcd_label_after:-no label}"
