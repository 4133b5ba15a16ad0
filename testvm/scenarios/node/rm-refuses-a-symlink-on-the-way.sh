# boot: enforcing
# expect: refused (rc=2)
# needs: node/apply-on-empty-var
# after: node/rm-below-var-mnt
#
# `rm -r` refuses a path through a symlink (/var/mnt/link -> etcd's data), with exit 2.
rm_refused /var/mnt/link/member
