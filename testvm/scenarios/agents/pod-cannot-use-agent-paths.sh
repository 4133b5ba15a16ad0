# boot: cri
# expect: denied to container_t, with the AVC on kubelet_plugins_registry_t
#
# What the layout gives agents stays theirs: an ordinary pod (container_t,
# the runtime's default) with kubelet's plugins_registry as a hostPath
# volume cannot register a plugin there. Refused with EACCES and the
# kernel's enforcing AVC, whose subject is the pod. Its control is
# agents/csi-writes-pod-volumes, where the CSI domain writes the same
# directory.
cri_ready
rm -f /var/lib/kubelet/plugins_registry/forged-reg.sock
dmesg -C
cri_run --name plugin-forger --mount /var/lib/kubelet/plugins_registry:/registration -- sh -c \
    'echo forged >/registration/forged-reg.sock'
ok=no
case "$cri_out $cri_said" in
    *"ermission denied"*)
        [ "$cri_rc" != 0 ] && [ ! -e /var/lib/kubelet/plugins_registry/forged-reg.sock ] &&
            denial kubelet_plugins_registry_t &&
            case $subject in system_u:system_r:container_t:*) ok=yes ;; esac ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160)"
[ -n "${avc:-}" ] && echo "@@AVC|$scenario|$avc"
