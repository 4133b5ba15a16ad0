# boot: enforcing
# expect: refused (rc=2)
# needs: node/apply-on-empty-var
# after: node/rm-below-var-mnt
#
# `rm -r` refuses the removable root itself, with exit 2.
rm_refused /var/mnt
