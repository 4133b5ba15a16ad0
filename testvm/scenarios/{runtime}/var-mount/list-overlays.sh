# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: deny:overlays_var_t
# control: leaky
#
# The node's configuration overlays are no pod's to list.
ls /host/var/system/overlays
