# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:pods_log_t
# control: leaky
#
# A pod cannot create files among the pod logs.
touch /host/var/log/pods/forged.log
