# boot: cri
# expect: etcd's member directory listed
# selinux: permissive
#
# Control for cri/pod-denied-etcd: in permissive mode the same pod lists
# etcd's data, so the denial comes from the policy and not from the set-up.
cri_ready
cri_run --name etcd-reader --level s0:c1,c2 --mount /var/lib/etcd:/etcd -- ls /etcd/default/member
ok=no
case "$nl$cri_out$nl" in
    *"${nl}snap$nl"*) [ "$cri_rc" = 0 ] && ok=yes ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160)"
