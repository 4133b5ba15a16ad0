# boot: systemd
# expect: relabel, then runtime
# control: layout-units-off
#
# In systemd's own record, in microseconds since boot: the relabel
# finished (ActiveEnterTimestampMonotonic of semanifest-relabel.service)
# before either runtime unit began (InactiveExitTimestampMonotonic).
relabelled=$(systemctl show --value -p ActiveEnterTimestampMonotonic semanifest-relabel.service)
started=$(systemctl show --value -p InactiveExitTimestampMonotonic containerd.service kubelet.service)
first=
for t in $started; do
    if [ -z "$first" ] || [ "$t" -lt "$first" ]; then first=$t; fi
done
ok=no
[ "${relabelled:-0}" -gt 0 ] && [ "${first:-0}" -ge "$relabelled" ] && ok=yes
report $ok "relabel done at ${relabelled:-?} us, runtime from ${first:-?} us"
