# boot: cri
# expect: etcd's member directory listed, in spc_t
#
# Control for agents/csi-cannot-read-etcd: the same pod, enforcing, with
# the same hostPath volume, capabilities and command, in spc_t (a
# privileged container's domain, which the suite's image adds for this
# control) lists etcd's data. So the runtime mounts the volume and etcd's
# data is there: the agent's denial comes from its domain.
cri_ready
cri_run --name csi-etcd --type spc_t --cap-add SYS_ADMIN --mount /var/lib:/host/var/lib -- sh -c \
    "ls /host/var/lib/etcd/default/member && tr -d '\\000' </proc/self/attr/current"
ok=no
case "$nl$cri_out$nl" in
    *"${nl}snap$nl"*system_u:system_r:spc_t:*) [ "$cri_rc" = 0 ] && ok=yes ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160)"
