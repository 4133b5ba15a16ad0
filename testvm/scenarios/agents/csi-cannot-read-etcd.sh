# boot: cri
# expect: denied to csi_node_t, with the AVC on var_t
#
# The CSI plugin's domain may mount and write the kubelet's volume
# directories, never etcd's data. The runtime itself may not look up
# /var/lib/etcd (cri/pod-denied-etcd), so the plugin's pod gets /var/lib as
# its hostPath volume, as drivers that mount whole host directories do.
# The plugin holds nothing in /var but kubelet's directories, which it
# reaches through their own volumes, so it may not even walk /var/lib:
# the lookup of etcd's directory is refused with EACCES and the kernel's
# enforcing AVC on /var/lib (var_t), whose subject is the agent. Its
# control is agents/control/spc-reads-etcd: the same pod in spc_t lists
# etcd's data through the same volume.
cri_ready
dmesg -C
cri_run --name csi-etcd --type csi_node_t --cap-add SYS_ADMIN --mount /var/lib:/host/var/lib -- \
    ls /host/var/lib/etcd/default/member
ok=no
case "$cri_out $cri_said" in
    *"ermission denied"*)
        [ "$cri_rc" != 0 ] && denial var_t &&
            case $subject in system_u:system_r:csi_node_t:*) ok=yes ;; esac ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160)"
[ -n "${avc:-}" ] && echo "@@AVC|$scenario|$avc"
