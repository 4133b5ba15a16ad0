# boot: enforcing
# expect: rc=0, limit=50331648
#
# The same as capacity/apply-ext4 on XFS (the fifth disk, mounted
# prjquota).
cap_layout
cap_disk /dev/vde /capxfs xfs
out=$(as_system semanifest apply --root /capxfs --layout /tmp/capacity.yaml 2>&1 >/dev/null); rc=$?
limit=$(cap_df /capxfs limit_bytes)
flat "$out"
got="rc=$rc, limit=${limit:-none}"
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got${flat:+: $flat}"
