# boot: enforcing
# expect: hardlink and link kept
# needs: node/apply-on-empty-var
# after: node/rm-refuses-*
#
# What rm refused is still there.
node_fixture
[ -e /node/var/mnt/hardlink ] && [ -L /node/var/mnt/link ] && ok=yes || ok=no
report $ok "$(ls /node/var/mnt | tr '\n' ' ')"
