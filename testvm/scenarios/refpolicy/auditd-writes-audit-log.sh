# boot: refpolicy
# expect: audit_log_t
# policy: refpolicy-module
#
# The layout re-types /var/log/audit (audit_log_t, protected) and names
# auditd_t its store owner: auditd, started as the service manager starts
# it (init_t executing a file of auditd's entry type), still appends the
# audit log, and the file it made has the layout's type. Without the
# owner grant the store's auditd_t has no rule on audit_log_t at all.
log=/var/log/audit/audit.log
dmesg -c >/dev/null
runcon system_u:system_r:init_t:s0 /usr/libexec/testvm/sh -c \
    "runcon system_u:system_r:auditd_t:s0 /usr/libexec/testvm/auditd/sh -c 'echo type=DAEMON_START testvm >>$log'" \
    </dev/null >/dev/null 2>&1
last=$(tail -n1 $log 2>/dev/null)
got=$(label_of $log)
case "$last|$got" in
    "type=DAEMON_START testvm|"*:object_r:$expected:*) report yes "appended; $got" ;;
    *) report no "last line '${last:-none}'; ${got:-no file}"; report_denials ;;
esac
