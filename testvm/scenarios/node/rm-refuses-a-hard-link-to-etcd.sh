# boot: enforcing
# expect: refused (rc=2)
# needs: node/apply-on-empty-var
# after: node/rm-below-var-mnt
#
# `rm -r` refuses a hard link to etcd's data (labelled etcd_var_t), with exit 2.
rm_refused /var/mnt/hardlink
