# boot: cri
# expect: container_t, at the categories containerd gave it
#
# A pod made through containerd's CRI with no seLinuxOptions runs in the
# process label of the policy's lxc_contexts (container_t), at MCS
# categories containerd chose for the pod. What the container reads in
# /proc/self/attr/current is what the runtime's status says it gave it.
cri_ready
cri_run --name started -- sh -c "tr -d '\\000' </proc/self/attr/current"
ok=no
case $cri_label in
    system_u:system_r:container_t:s0:c*,c*)
        [ "$cri_rc" = 0 ] && [ "$cri_out" = "$cri_label" ] && ok=yes ;;
esac
report $ok "in the container: ${cri_out:-nothing}; CRI status: ${cri_label:-none} ($cri_said)"
