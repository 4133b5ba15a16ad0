# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:kubelet_pki_t/kubelet_var_t
# control: leaky
#
# /var/lib/kubelet is protected as a whole: a pod walking /var stops
# there, before pki (kubelet_var_t); a layout that opened it would show
# kubelet_pki_t.
cat /host/var/lib/kubelet/pki/kubelet-client-current.pem
