# boot: reboot
# expect: system_u:object_r:var_mnt_t:s0:c3,c4
# needs: {runtime}/mnt-mount/other-pod-writes
#
# The boot's relabel is --type-only: what a pod wrote under /var/mnt in
# the last boot keeps its MCS categories.
got=$(label_of "/var/mnt/$runtime-c3c4")
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "${got:-no label}"
