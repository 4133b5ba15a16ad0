# boot: cri
# expect: the volume published into the pod's directory, the plugin registered
#
# A CSI node plugin's pod, made through the CRI in csi_node_t with
# SYS_ADMIN and kubelet's plugin directories as hostPath volumes, does
# what a driver does on NodePublishVolume: it stages a volume under
# plugins/, bind-mounts it into the pod's volume directory under
# /var/lib/kubelet/pods/UID/volumes, writes through the mount, and leaves
# its registration in plugins_registry. Nothing of it is denied (the boot's
# cri/no-unexpected-denial counts every AVC).
cri_ready
uid=testvm-csi-pod
volume=/var/lib/kubelet/pods/$uid/volumes/kubernetes.io~csi/pv-1/mount
rm -rf "/var/lib/kubelet/pods/$uid" /var/lib/kubelet/plugins/testvm.csi \
    /var/lib/kubelet/plugins_registry/testvm.csi-reg.sock
cri_run --name csi-node --type csi_node_t --cap-add SYS_ADMIN \
    --mount /var/lib/kubelet/pods:/var/lib/kubelet/pods \
    --mount /var/lib/kubelet/plugins:/var/lib/kubelet/plugins \
    --mount /var/lib/kubelet/plugins_registry:/registration -- sh -c "
        staged=/var/lib/kubelet/plugins/testvm.csi/pv-1/globalmount &&
        mkdir -p \$staged $volume &&
        echo staged-by-the-driver >\$staged/data &&
        mount --bind \$staged $volume &&
        echo published >$volume/by-the-pod &&
        cat $volume/data &&
        umount $volume &&
        echo registered >/registration/testvm.csi-reg.sock &&
        tr -d '\\000' </proc/self/attr/current"
published=$(cat /var/lib/kubelet/plugins/testvm.csi/pv-1/globalmount/by-the-pod 2>&1)
registration=$(stat -c %C /var/lib/kubelet/plugins_registry/testvm.csi-reg.sock 2>&1)
ok=no
case "$nl$cri_out$nl" in
    *"${nl}staged-by-the-driver${nl}system_u:system_r:csi_node_t:"*)
        [ "$cri_rc" = 0 ] && [ "$published" = published ] &&
            case $registration in system_u:object_r:kubelet_plugins_registry_t:*) true ;; *) false ;; esac &&
            ok=yes ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160); through the mount: $published; registration: $registration"
