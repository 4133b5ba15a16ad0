# boot: enforcing
# expect: system_u:object_r:kubelet_var_t:s0
# needs: node/apply-on-empty-var
# after: node/kubelet-recreates-pki
#
# Control for node/kubelet-recreates-pki: another name in the same parent
# gets the parent's type, as any new object does without a transition.
dmesg -c >/dev/null
out=$(runcon system_u:system_r:kubelet_t:s0 /bin/sh -c \
    'cd /node/var/lib/kubelet && mkdir pki-other' 2>&1 </dev/null); rc=$?
flat "$out"
got=$(label_of /node/var/lib/kubelet/pki-other)
[ "$rc" = 0 ] && [ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "${got:-rc=$rc: $flat}"
[ $ok = yes ] || report_denials
