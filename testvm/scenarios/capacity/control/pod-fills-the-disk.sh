# boot: enforcing
# pod: s0:c7,c8 /capctl/var/mnt:/host/mnt:rw
# expect: allow:ENOSPC
# needs: capacity/control/apply-without-limit
#
# Without a limit the same fill as capacity/pod-fills-var-mnt stops only
# when the disk is full.
sh -c "dd if=/dev/zero of=/host/mnt/fill bs=64k 2>&1 | grep -q 'No space left' && echo ENOSPC"
