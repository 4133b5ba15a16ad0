# boot: enforcing
# expect: system_u:object_r:var_mnt_t:s0:c3,c4
# needs: {runtime}/mnt-mount/other-pod-writes
#
# What the pod at s0:c3,c4 wrote under /var/mnt carries its categories.
got=$(label_of "/var/mnt/$runtime-c3c4")
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "${got:-no label}"
