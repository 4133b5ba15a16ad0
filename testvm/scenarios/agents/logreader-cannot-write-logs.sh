# boot: cri
# expect: denied to log_reader_t, with the AVC on pods_log_t
#
# The log shipper reads pods' logs and may not forge them: with
# /var/log/pods as a writable hostPath volume, its pod's append to another
# pod's log is refused with EACCES and the kernel's enforcing AVC, whose
# subject is the agent; the log is unchanged.
cri_ready
cri_run --name log-victim -- echo the-real-line
log=$(ls /var/log/pods/default_log-victim_*/main/0.log | head -n1)
before=$(cksum <"$log")
dmesg -C
cri_run --name log-forger --type log_reader_t --mount /var/log/pods:/logs -- sh -c \
    "echo forged >>/logs/${log#/var/log/pods/}"
after=$(cksum <"$log")
ok=no
case "$cri_out $cri_said" in
    *"ermission denied"*)
        [ "$cri_rc" != 0 ] && [ "$before" = "$after" ] && denial pods_log_t &&
            case $subject in system_u:system_r:log_reader_t:*) ok=yes ;; esac ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160); log $before -> $after"
[ -n "${avc:-}" ] && echo "@@AVC|$scenario|$avc"
