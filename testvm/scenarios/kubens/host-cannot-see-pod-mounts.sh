# boot: systemd
# expect: in namespace, not on host
# after: units/* selinux/systemd-enforcing
#
# kubelet runs in the namespace pinned at /run/kubens/mnt, not PID 1's; a
# mount made inside it (as a runtime mounts a pod's volume) is in the
# namespace's table and not in PID 1's.
kubens_probe
mkdir -p /var/lib/kubelet/testvm-pod
nsenter --mount="/proc/$kubelet/ns/mnt" mount -t tmpfs -o size=1m testvm-pod /var/lib/kubelet/testvm-pod
inside=$(grep -c ' /var/lib/kubelet/testvm-pod ' "/proc/$kubelet/mountinfo")
outside=$(grep -c ' /var/lib/kubelet/testvm-pod ' /proc/1/mountinfo)
ok=no
[ "$kube_ns" != "$host_ns" ] && [ "$kube_ns" = "mnt:[$pinned]" ] && [ "$inside" = 1 ] && [ "$outside" = 0 ] && ok=yes
report $ok "kubelet $kube_ns (pinned $pinned), mount seen inside $inside, on host $outside"
