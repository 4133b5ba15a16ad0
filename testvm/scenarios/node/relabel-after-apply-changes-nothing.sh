# boot: enforcing
# expect: relabelled = 0
# needs: node/apply-on-empty-var
# after: node/apply-labelled-etcd
#
# What apply placed is labelled as file_contexts says: a full relabel
# afterwards changes nothing.
out=$(semanifest relabel --json --file-contexts /etc/semanifest/file_contexts --root /node /node/var 2>/dev/null); rc=$?
relabelled=$(json_field relabelled "$out") examined=$(json_field examined "$out")
[ "$rc" = 0 ] && [ "$relabelled" = 0 ] && [ "${examined:-0}" -gt 0 ] && ok=yes || ok=no
report $ok "rc=$rc: $relabelled of $examined objects relabelled"
