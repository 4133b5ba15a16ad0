# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:var_mnt_t:s0:c3,c4
# needs: {runtime}/mnt-mount/other-pod-writes
#
# MCS keeps tenants apart on the one type they may both write: a pod at
# s0:c1,c2 cannot read what the pod at s0:c3,c4 wrote under /var/mnt.
cat /host/var/mnt/$RUNTIME-c3c4
