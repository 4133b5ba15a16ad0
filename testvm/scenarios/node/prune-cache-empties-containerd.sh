# boot: enforcing
# expect: rc=0, empty, containerd_var_t
# needs: node/apply-on-empty-var
# after: node/control/kubelet-makes-another-name
#
# `prune --lifecycle cache`, run by the system domain as the boot unit
# runs it, empties containerd's directory (a symlink into etcd's inside it
# included) and keeps the directory with its label.
node_fixture
dmesg -c >/dev/null
out=$(as_system semanifest prune --root /node --lifecycle cache 2>&1); rc=$?
flat "$(echo "$out" | tail -n1)"
left=$(ls -A /node/var/lib/containerd | tr '\n' ' ')
got=$(label_of /node/var/lib/containerd)
[ "$rc" = 0 ] && [ -z "$left" ] && [ "$got" = system_u:object_r:containerd_var_t:s0 ] && ok=yes || ok=no
report $ok "rc=$rc, left: ${left:-nothing}, $got: $flat"
[ $ok = yes ] || report_denials
