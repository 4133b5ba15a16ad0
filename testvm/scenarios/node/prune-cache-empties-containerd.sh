# boot: enforcing
# expect: rc=0, only the declared snapshot and sandbox directories left, empty, containerd_var_t
# needs: node/apply-on-empty-var
# after: node/control/kubelet-makes-another-name
#
# `prune --lifecycle cache`, run by the system domain as the boot unit
# runs it, empties containerd's directory (a symlink into etcd's inside it
# included) and keeps the directory with its label; the snapshot and
# sandbox directories the layout declares inside it are kept, emptied.
node_fixture
dmesg -c >/dev/null
out=$(as_system semanifest prune --root /node --lifecycle cache 2>&1); rc=$?
flat "$(echo "$out" | tail -n1)"
c=/node/var/lib/containerd
left=$(ls -A $c | tr '\n' ' ')
cri=$(ls -A $c/io.containerd.grpc.v1.cri | tr '\n' ' ')
inside=$(ls -A $c/io.containerd.snapshotter.v1.overlayfs 2>&1; ls -A $c/io.containerd.grpc.v1.cri/sandboxes 2>&1)
got=$(label_of $c)
[ "$rc" = 0 ] && [ "$left" = "io.containerd.grpc.v1.cri io.containerd.snapshotter.v1.overlayfs " ] \
    && [ "$cri" = "sandboxes " ] && [ -z "$inside" ] \
    && [ "$got" = system_u:object_r:containerd_var_t:s0 ] && ok=yes || ok=no
report $ok "rc=$rc, left: ${left:-nothing}(cri: ${cri:-nothing}; inside: ${inside:-nothing}), $got: $flat"
[ $ok = yes ] || report_denials
