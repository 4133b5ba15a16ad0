# boot: enforcing
# expect: digest changed
# needs: node/apply-on-empty-var
# after: node/etcd-unchanged-by-prune-and-rm
#
# Control for node/etcd-unchanged-by-prune-and-rm: the policy lets the
# system domain do all of it, so the refusals were semanifest's. A plain
# `rm -r` through the same symlink deletes etcd's data, and the digest
# sees it.
node_fixture
as_system rm -r /node/var/mnt/link/member 2>&1
after=$(etcd_digest)
[ "$after" != "$node_etcd_before" ] && [ ! -e /node/var/lib/etcd/member ] && ok=yes || ok=no
report $ok "${after%% *}"
