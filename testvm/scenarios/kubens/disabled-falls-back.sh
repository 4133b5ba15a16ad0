# boot: systemd
# expect: host namespace
# after: kubens/restart-keeps-namespace units/*
#
# With kubens.service disabled and stopped, a restarted kubelet runs in
# PID 1's namespace, as without kubens.
kubens_probe
systemctl disable --now --quiet kubens.service
systemctl restart kubelet.service
last=$(kubelet_pid)
last_ns=$(readlink "/proc/$last/ns/mnt" 2>&1)
state=$(systemctl is-enabled kubens.service 2>&1)
ok=no
[ "$last_ns" = "$host_ns" ] && [ "$state" = disabled ] && ok=yes
report $ok "kubens $state, kubelet $last in $last_ns (PID 1 $host_ns)"
# As the image had it, for a next boot of the same disk (--boot-bench).
systemctl enable --quiet kubens.service
