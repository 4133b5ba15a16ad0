# boot: systemd
# expect: 0 AVC
# needs: selinux/a-denial-is-seen
# after: *
#
# Nothing was denied all boot but the probe of selinux/a-denial-is-seen,
# in the kernel (dmesg) or in systemd's own checks (the journal's
# user-space AVCs). No pod runs in this boot: container_t's denials are
# the probe's. Every AVC line is also on the console, as testvm-avc:.
kernel_avcs=$(dmesg | grep -F 'avc:')
user_avcs=$(journalctl -b -o cat _TRANSPORT=journal _TRANSPORT=syslog _TRANSPORT=stdout | grep -F 'avc:')
others=$(printf '%s\n%s\n' "$kernel_avcs" "$user_avcs" | grep -F 'avc:' | grep -vc 'scontext=system_u:system_r:container_t:')
printf '%s\n%s\n' "$kernel_avcs" "$user_avcs" | grep -F 'avc:' | sed 's/^/testvm-avc: /'
ok=no
[ "$others" = 0 ] && ok=yes
report $ok "$others AVC besides the probe's"
