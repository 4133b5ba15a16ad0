# boot: enforcing
# pod: s0:c9,c10 /capxfs/var/mnt:/host/mnt:rw
# expect: allow:ENOSPC-at-limit
# needs: capacity/xfs-apply
#
# capacity/pod-fills-var-mnt on XFS, whose project quotas answer ENOSPC,
# not EDQUOT (a project is a directory tree that looks like a full
# filesystem to its writers): the fill stops within 64 KiB of the
# project's 48 MiB, with most of the 320 MiB disk free.
sh -c 'dd if=/dev/zero of=/host/mnt/fill bs=4k 2>&1 | grep -q "No space left" && size=$(stat -c %s /host/mnt/fill) && [ $((50331648 - size)) -le 65536 ] && echo ENOSPC-at-limit || echo "stopped at ${size:-?} bytes"'
