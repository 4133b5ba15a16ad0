# boot: enforcing
# expect: decoy emptied
# needs: node/apply-on-empty-var
# after: node/prune-refuses-mount-on-target node/apply-refuses-mount-on-declared-path
#
# Control for node/prune-refuses-mount-on-target: the policy lets the
# system domain delete through the mount, so the refusal was semanifest's.
# A prune that crosses it (everything below /var/mnt deleted by path)
# empties the directory bound there; a decoy stands in for etcd's.
node_fixture
as_system /bin/sh -c 'mkdir -p /node/var/lib/decoy/member && echo db >/node/var/lib/decoy/member/db' \
    || fatal "making the decoy"
mount --bind /node/var/lib/decoy /node/var/mnt || fatal "binding the decoy onto /node/var/mnt"
as_system /bin/sh -c 'rm -rf /node/var/mnt/*' 2>&1
umount /node/var/mnt || fatal "unmounting /node/var/mnt"
left=$(ls -A /node/var/lib/decoy | tr '\n' ' ')
rm -rf /node/var/lib/decoy
[ -z "$left" ] && ok=yes || ok=no
report $ok "left in the decoy: ${left:-nothing}"
[ $ok = yes ] || report_denials
