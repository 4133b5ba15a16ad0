# boot: fedora
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:etcd_var_t
# policy: fedora-module
#
# Fedora's store labels /var/lib/etcd var_lib_t; with the layout's module
# installed by semodule it is etcd_var_t, and a hostPath pod (container_t,
# started by the runtime in container_runtime_t) is denied etcd's data,
# with the AVC on etcd_var_t.
cat /host/var/lib/etcd/member/snap/db
