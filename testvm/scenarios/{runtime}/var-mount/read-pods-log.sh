# boot: enforcing
# pod: s0:c1,c2 /var:/host/var:rw
# expect: allow:GET-/-200
#
# Pod logs are readable (the layout grants read on them).
head -n1 /host/var/log/pods/default_web_0/web/0.log
