# boot: enforcing
# expect: allowed
#
# kubelet, in its own domain, rotates its certificates in pki.
host_check system_u:system_r:kubelet_t:s0 "rotated-cert" \
    "echo rotated-cert >/var/lib/kubelet/pki/kubelet-client-rotated.pem && cat /var/lib/kubelet/pki/kubelet-client-rotated.pem"
