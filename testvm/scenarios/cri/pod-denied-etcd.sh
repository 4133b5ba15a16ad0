# boot: cri
# expect: denied, with the AVC on etcd_var_t
#
# A pod made through the CRI with etcd's data directory as a hostPath
# volume: the runtime is refused the mount source, or the pod is refused
# what is in it; either way with EACCES and the kernel's enforcing AVC on
# etcd_var_t. Its control is control/permissive/cri/pod-reads-etcd.
cri_ready
dmesg -C
cri_run --name etcd-reader --level s0:c1,c2 --mount /var/lib/etcd:/etcd -- ls /etcd/default/member
ok=no
case "$cri_out $cri_said" in
    *"ermission denied"*) [ "$cri_rc" != 0 ] && denial etcd_var_t && ok=yes ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160)"
[ -n "${avc:-}" ] && echo "@@AVC|$scenario|$avc"
