# boot: reboot
# expect: rc=0, limit=50331648, full
# needs: capacity/etcd-writes-after-var-mnt-full
#
# The next boot, the same disk: the filesystem still holds the limit and
# the fill, and `apply --check` finds nothing to repair (every object
# still in its project).
cap_layout
cap_disk /dev/vdc /cap ext4
out=$(as_system semanifest apply --check --root /cap --layout /tmp/capacity.yaml 2>&1 >/dev/null); rc=$?
limit=$(cap_df /cap limit_bytes)
used=$(cap_df /cap used_bytes)
[ -n "$used" ] && [ $((cap_limit - used)) -le 4096 ] && full=full || full="used ${used:-?}"
flat "$out"
got="rc=$rc, limit=${limit:-none}, $full"
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got${flat:+: $flat}"
