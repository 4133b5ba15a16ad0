# boot: enforcing
# expect: rc=2, the mount named, etcd unchanged
# needs: node/apply-on-empty-var
# after: node/prune-cache-empties-containerd
#
# A pod with Bidirectional propagation on /var/mnt binds etcd's directory
# onto it. `prune /var/mnt`, run by the system domain as the boot unit
# runs it, refuses with exit 2, names the path and the mount, and changes
# nothing: etcd's digest is what it was (and
# node/etcd-unchanged-by-prune-and-rm checks it again later). Control:
# through the mount, etcd's data is there for a prune that crosses it to
# empty.
node_fixture
before=$(etcd_digest)
mount --bind /node/var/lib/etcd /node/var/mnt || fatal "binding etcd onto /node/var/mnt"
[ -e /node/var/mnt/member/snap/db ] && exposed=yes || exposed=no
out=$(as_system semanifest prune --root /node /var/mnt 2>&1); rc=$?
umount /node/var/mnt || fatal "unmounting /node/var/mnt"
flat "$out"
after=$(etcd_digest)
case "$out" in
    *"/node/var/mnt: a bind mount of another directory: /lib/etcd of "*) named=yes ;;
    *) named=no ;;
esac
[ $exposed = yes ] && [ "$rc" = 2 ] && [ $named = yes ] && [ "$after" = "$before" ] && ok=yes || ok=no
report $ok "rc=$rc, exposed=$exposed, named=$named, etcd ${after%% *}: $flat"
[ $ok = yes ] || report_denials
