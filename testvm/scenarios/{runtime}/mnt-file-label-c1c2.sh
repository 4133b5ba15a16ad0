# boot: enforcing
# expect: system_u:object_r:var_mnt_t:s0:c1,c2
# needs: {runtime}/var-mount/create-write-mnt
#
# What the pod at s0:c1,c2 wrote under /var/mnt carries its categories.
got=$(label_of "/var/mnt/$runtime-c1c2")
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "${got:-no label}"
