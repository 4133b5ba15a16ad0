# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: allow:written-by-c1c2
#
# The hostPath root is the pods' to write: the file gets the pod's
# categories ({runtime}/mnt-file-label-c1c2).
sh -c "echo written-by-c1c2 >/host/var/mnt/$RUNTIME-c1c2 && cat /host/var/mnt/$RUNTIME-c1c2"
