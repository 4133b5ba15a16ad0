# boot: systemd
# expect: same namespace
# after: kubens/host-mounts-propagate units/*
#
# After `systemctl restart kubelet.service` the new main process enters
# the pinned namespace again, so it still sees the pod's mount.
kubens_probe
systemctl restart kubelet.service
again=$(kubelet_pid)
again_ns=$(readlink "/proc/$again/ns/mnt" 2>&1)
ok=no
[ "$again" != "$kubelet" ] && [ "$again_ns" = "$kube_ns" ] && ok=yes
report $ok "kubelet $kubelet -> $again, $kube_ns -> $again_ns"
