# boot: enforcing
# expect: etcd failed: ENOSPC
# needs: capacity/control/pod-fills-the-disk
#
# The control of capacity/etcd-writes-after-var-mnt-full: after a pod
# filled /var/mnt without a limit, etcd's 64 MiB write fails with ENOSPC
# (no blocks are reserved for root on these disks).
out=$(runcon system_u:system_r:etcd_t:s0 dd if=/dev/zero of=/capctl/var/lib/etcd/wal-64m bs=1M count=64 2>&1 </dev/null); rc=$?
flat "$out"
case "$rc $flat" in
    0\ *) got="etcd wrote 64 MiB" ;;
    *"No space left"*) got="etcd failed: ENOSPC" ;;
    *) got="etcd failed: $flat" ;;
esac
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got"
