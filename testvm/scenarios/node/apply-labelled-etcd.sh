# boot: enforcing
# expect: system_u:object_r:etcd_var_t:s0
# needs: node/apply-on-empty-var
#
# apply made etcd's directory with its label: born etcd_var_t.
got=$(label_of /node/var/lib/etcd)
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "${got:-no label}"
