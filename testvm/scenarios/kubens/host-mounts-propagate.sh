# boot: systemd
# expect: seen inside, as slave
# after: kubens/host-cannot-see-pod-mounts
#
# A tmpfs the host mounts under /var/mnt (rshared) appears in kubelet's
# table, as a slave (master:N in its optional fields).
kubens_probe
mkdir -p /var/mnt/testvm-host
mount -t tmpfs -o size=1m testvm-host /var/mnt/testvm-host
# One line: the mount may arrive more than once (each shared parent).
line=$(grep -m1 ' /var/mnt/testvm-host ' "/proc/$kubelet/mountinfo")
ok=no
case "$line" in *" master:"*) ok=yes ;; esac
report $ok "${line:-not in the namespace}"
