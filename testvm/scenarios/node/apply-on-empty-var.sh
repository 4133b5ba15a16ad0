# boot: enforcing
# expect: rc=0, directories created
#
# The node runtime on an empty ext4 /var (the second disk), enforcing, as
# the boot unit runs it: `apply` in the trusted system domain (init_t)
# places the layout.
node_var
dmesg -c >/dev/null
out=$(apply_as_system); rc=$?
flat "$(echo "$out" | tail -n1)"
case "$rc $flat" in "0 apply: "*" created, "*) ok=yes ;; *) ok=no ;; esac
report $ok "rc=$rc: $flat"
[ $ok = yes ] || report_denials
