# boot: cri
# expect: another pod's log read, in log_reader_t
#
# A pod writes a line; the runtime keeps it in the pod's log under
# /var/log/pods. A log shipper's pod, made through the CRI in log_reader_t
# with /var/log/pods as a read-only hostPath volume, reads that line.
cri_ready
cri_run --name log-source -- echo line-for-the-shipper
cri_run --name log-shipper --type log_reader_t --mount /var/log/pods:/logs:ro -- sh -c \
    "cat /logs/default_log-source_*/main/0.log && tr -d '\\000' </proc/self/attr/current"
ok=no
case "$cri_out" in
    *line-for-the-shipper*system_u:system_r:log_reader_t:*) [ "$cri_rc" = 0 ] && ok=yes ;;
esac
report $ok "exit $cri_rc: $(printf '%s' "$cri_out $cri_said" | tr '\n|' '  ' | cut -c1-200)"
