# boot: enforcing
# pod: s0:c3,c4 /var/mnt:/host/mnt:rw
# expect: allow:secret-of-c3c4
#
# The other tenant (s0:c3,c4) writes under the hostPath root, so that a
# pod at s0:c1,c2 can try to read its file: same type, other MCS
# categories ({runtime}/var-mount/read-other-pods-mnt).
sh -c "echo secret-of-c3c4 >/host/mnt/$RUNTIME-c3c4 && cat /host/mnt/$RUNTIME-c3c4"
