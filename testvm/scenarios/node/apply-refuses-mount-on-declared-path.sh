# boot: enforcing
# expect: rc=2, the mount named, etcd unchanged
# needs: node/apply-on-empty-var
# after: node/prune-cache-empties-containerd
#
# etcd's directory bound onto the declared /var/mnt: `apply`, as the boot
# unit runs it, would relabel it var_mnt_t (and chown and chmod it for a
# declared path below). It refuses with exit 2, names the path and the
# mount, and changes nothing: etcd's digest (names, modes, owners, labels,
# contents, its own directory's included) is what it was, and its
# directory is still etcd_var_t. Control: through the mount, etcd's
# directory is the one apply would have repaired.
node_fixture
before=$(etcd_digest)
mount --bind /node/var/lib/etcd /node/var/mnt || fatal "binding etcd onto /node/var/mnt"
[ "$(label_of /node/var/mnt)" = system_u:object_r:etcd_var_t:s0 ] && exposed=yes || exposed=no
out=$(apply_as_system); rc=$?
umount /node/var/mnt || fatal "unmounting /node/var/mnt"
flat "$out"
after=$(etcd_digest)
got=$(label_of /node/var/lib/etcd)
case "$out" in
    *"/node/var/mnt: a bind mount of another directory: /lib/etcd of "*) named=yes ;;
    *) named=no ;;
esac
[ $exposed = yes ] && [ "$rc" = 2 ] && [ $named = yes ] && [ "$after" = "$before" ] \
    && [ "$got" = system_u:object_r:etcd_var_t:s0 ] && ok=yes || ok=no
report $ok "rc=$rc, exposed=$exposed, named=$named, $got, etcd ${after%% *}: $flat"
[ $ok = yes ] || report_denials
