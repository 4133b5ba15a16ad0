# boot: cri
# expect: denied to csi_node_t, with the AVC on kubelet_var_t
#
# CSI drivers commonly mount all of /var/lib/kubelet. The plugin's domain
# holds kubelet's plugin and pod volume directories, which the runtime
# bind-mounts for it, and may not walk kubelet's own state to its
# certificates and keys: with /var/lib/kubelet as a hostPath volume,
# reading pki/ is refused with EACCES and the kernel's enforcing AVC on
# kubelet's protected directory, whose subject is the agent. (The runtime
# may not look up pki/ itself, so no pod gets it as a volume.)
cri_ready
dmesg -C
cri_run --name csi-pki --type csi_node_t --cap-add SYS_ADMIN --mount /var/lib/kubelet:/var/lib/kubelet -- \
    ls /var/lib/kubelet/pki
ok=no
case "$cri_out $cri_said" in
    *"ermission denied"*)
        [ "$cri_rc" != 0 ] && denial kubelet_var_t &&
            case $subject in system_u:system_r:csi_node_t:*) ok=yes ;; esac ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160)"
[ -n "${avc:-}" ] && echo "@@AVC|$scenario|$avc"
