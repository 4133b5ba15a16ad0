# boot: cri
# expect: 0 AVC but the denials scenarios claimed
# needs: agents/etcd-serves-after-all
#
# Nothing was denied all boot, in the kernel or in systemd's own checks,
# but what a scenario claimed with `denial` (its subject's exact context
# on that object): containerd, runc, etcd, the pods' own rootfs and
# journald all ran without one. A scenario run permissive (a control)
# logs its AVCs with permissive=1, and those are the control's; in a boot
# started permissive (testvm/run --permissive) every AVC counts. It needs
# the last scenario of the boot, so it runs after it; the kernel's lines
# come from the journal, which `dmesg -C` does not clear. Every AVC line
# is also on the console, as testvm-avc:.
touch /run/testvm-claimed-denials
avcs=$( (journalctl -k -b -o cat
    journalctl -b -o cat _TRANSPORT=journal _TRANSPORT=syslog _TRANSPORT=stdout) | grep -F 'avc:')
case $cmdline in
    *" enforcing=0"*) ;;
    *) avcs=$(printf '%s\n' "$avcs" | grep -v 'permissive=1') ;;
esac
unexpected=$(printf '%s\n' "$avcs" | grep -F 'avc:' | grep -vFf /run/testvm-claimed-denials)
claimed=$(sort -u /run/testvm-claimed-denials | grep -c .)
ok=no
[ -z "$unexpected" ] && ok=yes
printf '%s\n' "$unexpected" | grep -F 'avc:' | sed 's/^/testvm-unexpected-avc: /'
report $ok "$(printf '%s\n' "$unexpected" | grep -c 'avc:') AVC besides the $claimed claimed: $(printf '%s\n' "$unexpected" | grep -m1 -o 'avc: .*' | cut -c1-200)"
