# boot: fedora
# expect: auditd_t denied on audit_log_t
# policy: fedora-no-owner
# after: fedora/auditd-writes-audit-log
#
# Control for fedora/auditd-writes-audit-log: the module built from the
# layout without `storeOwners: [auditd_t]`, loaded in the same boot. The
# log is still audit_log_t, and auditd is refused, with the kernel's
# enforcing AVC: the owner grant is what keeps it writing.
auditd_denied
