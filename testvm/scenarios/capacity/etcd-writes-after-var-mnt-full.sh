# boot: enforcing
# expect: full, etcd wrote 64 MiB
# needs: capacity/pod-fills-var-mnt
#
# The pod's fill stopped within a block of /var/mnt's limit, and etcd
# (etcd_t) still writes 64 MiB to its own directory on the same
# filesystem. The control is capacity/control/no-limit-etcd-starves.
used=$(cap_df /cap used_bytes)
[ -n "$used" ] && [ $((cap_limit - used)) -le 4096 ] && full=full || full="not full: used ${used:-?} of $cap_limit"
out=$(runcon system_u:system_r:etcd_t:s0 dd if=/dev/zero of=/cap/var/lib/etcd/wal-64m bs=1M count=64 2>&1 </dev/null); rc=$?
flat "$out"
[ $rc = 0 ] && etcd="etcd wrote 64 MiB" || etcd="etcd failed: $flat"
got="$full, $etcd"
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got"
[ $ok = yes ] || report_denials
