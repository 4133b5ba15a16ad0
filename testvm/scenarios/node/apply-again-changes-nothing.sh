# boot: enforcing
# expect: rc=0, nothing to change
# needs: node/apply-on-empty-var
# after: node/relabel-after-apply-changes-nothing
#
# A second `apply --check` finds nothing to repair.
out=$(apply_as_system --check); rc=$?
flat "$(echo "$out" | tail -n1)"
case "$rc $flat" in "0 apply: "*"nothing to change"*) ok=yes ;; *) ok=no ;; esac
report $ok "rc=$rc: $flat"
