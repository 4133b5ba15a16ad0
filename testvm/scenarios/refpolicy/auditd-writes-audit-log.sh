# boot: refpolicy
# expect: audit_log_t
# policy: refpolicy-module
#
# The layout re-types /var/log/audit (audit_log_t, protected) and names
# auditd_t its store owner: auditd, started as the service manager starts
# it (init_t executing a file of auditd's entry type), still appends the
# audit log, and the file it made has the layout's type. Without the
# owner grant the store's auditd_t has no rule on audit_log_t at all
# (refpolicy/control/auditd-denied-without-owner).
auditd_writes
