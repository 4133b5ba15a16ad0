# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:pods_log_t
# control: leaky
#
# A pod cannot forge lines in the pod logs kubelet keeps.
sh -c "echo forged >>/host/var/log/pods/default_web_0/web/0.log"
