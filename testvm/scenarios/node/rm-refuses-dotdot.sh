# boot: enforcing
# expect: refused (rc=2)
# needs: node/apply-on-empty-var
# after: node/rm-below-var-mnt
#
# `rm -r` refuses a path that walks up with `..`, with exit 2.
rm_refused /var/mnt/../lib/etcd
