# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:audit_log_t
# control: leaky
#
# The API server's audit log is no pod's to read.
cat /host/var/log/audit/kube-apiserver.log
