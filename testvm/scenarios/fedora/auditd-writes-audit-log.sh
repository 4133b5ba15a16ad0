# boot: fedora
# expect: audit_log_t
# policy: fedora-module
#
# On Fedora's targeted store, auditd_t writes auditd_log_t; the layout
# re-types /var/log/audit (audit_log_t, protected) and names auditd_t its
# store owner. auditd, started as systemd starts it (init_t executing a
# file of auditd_exec_t), still appends the audit log, which has the
# layout's type.
auditd_writes
