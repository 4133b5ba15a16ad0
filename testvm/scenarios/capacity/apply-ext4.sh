# boot: enforcing
# expect: rc=0, limit=50331648
#
# `apply`, as the boot unit runs it (init_t), on an ext4 made with
# `-O quota,project` and mounted prjquota (the third disk), with the
# default layout plus `capacity: { limit: 48Mi, inodes: 4096 }` on
# /var/mnt: the filesystem then holds the project's limit.
cap_layout
cap_disk /dev/vdc /cap ext4
out=$(as_system semanifest apply --root /cap --layout /tmp/capacity.yaml 2>&1 >/dev/null); rc=$?
limit=$(cap_df /cap limit_bytes)
flat "$out"
got="rc=$rc, limit=${limit:-none}"
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got${flat:+: $flat}"
