# boot: enforcing
# expect: rc=0, removed
# needs: node/apply-on-empty-var
# after: node/prune-cache-empties-containerd
#
# `rm -r` removes what is below /var/mnt.
node_fixture
out=$(as_system semanifest rm --root /node -r /var/mnt/scratch 2>&1); rc=$?
flat "$out"
[ "$rc" = 0 ] && [ ! -e /node/var/mnt/scratch ] && ok=yes || ok=no
report $ok "rc=$rc: $flat"
