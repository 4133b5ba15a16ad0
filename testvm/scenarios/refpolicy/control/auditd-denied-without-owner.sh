# boot: refpolicy
# expect: auditd_t denied on audit_log_t
# policy: refpolicy-no-owner
# after: refpolicy/auditd-writes-audit-log
#
# Control for refpolicy/auditd-writes-audit-log: the module built from the
# layout without `storeOwners: [auditd_t]` on /var/log/audit. The log is
# still audit_log_t, and auditd, started the same way, is refused, with
# the kernel's enforcing AVC.
auditd_denied
