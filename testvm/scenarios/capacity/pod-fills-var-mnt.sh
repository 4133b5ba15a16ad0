# boot: enforcing
# pod: s0:c5,c6 /cap/var/mnt:/host/mnt:rw
# expect: allow:EDQUOT
# needs: capacity/apply-ext4
#
# A pod (container_t, the runtime's default capabilities: no
# CAP_SYS_RESOURCE) writes below /var/mnt, one block at a time, until the
# filesystem refuses: EDQUOT at the project's limit, with two thirds of
# the disk free (capacity/etcd-writes-after-var-mnt-full checks where it
# stopped).
sh -c "dd if=/dev/zero of=/host/mnt/fill bs=4k 2>&1 | grep -q 'quota exceeded' && echo EDQUOT"
