# boot: cri
# expect: denied to log_reader_t, with the AVC on audit_log_t
#
# A log shipper mounts /var/log and reads it, but never the audit log,
# which is protected: with /var/log as a read-only hostPath volume,
# listing audit/ is refused with EACCES and the kernel's enforcing AVC,
# whose subject is the agent. Its control is agents/logreader-reads-pod-logs
# (the same domain reads what it holds).
cri_ready
dmesg -C
cri_run --name log-audit --type log_reader_t --mount /var/log:/logs:ro -- ls /logs/audit
ok=no
case "$cri_out $cri_said" in
    *"ermission denied"*)
        [ "$cri_rc" != 0 ] && denial audit_log_t &&
            case $subject in system_u:system_r:log_reader_t:*) ok=yes ;; esac ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-160)"
[ -n "${avc:-}" ] && echo "@@AVC|$scenario|$avc"
