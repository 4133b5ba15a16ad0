# boot: enforcing
# expect: etcd's digest from before prune and rm
# needs: node/apply-on-empty-var
# after: node/prune-* node/rm-*
#
# Every escape towards etcd's data was refused, and a digest of etcd's
# tree (names, modes, owners, labels, contents) is what it was before
# prune and rm ran. Its control is node/control/plain-rm-follows-the-link.
node_fixture
after=$(etcd_digest)
expected=${node_etcd_before%% *}
[ "$after" = "$node_etcd_before" ] && ok=yes || ok=no
report $ok "${after%% *}"
