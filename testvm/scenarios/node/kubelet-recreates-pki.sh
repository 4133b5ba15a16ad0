# boot: enforcing
# expect: system_u:object_r:kubelet_pki_t:s0
# needs: node/apply-on-empty-var
# after: node/apply-again-changes-nothing
#
# kubelet (kubelet_t) removing and recreating its declared pki directory
# gets kubelet_pki_t from the policy's named type transition, with no
# relabel. Its control is node/control/kubelet-makes-another-name.
dmesg -c >/dev/null
out=$(runcon system_u:system_r:kubelet_t:s0 /bin/sh -c \
    'cd /node/var/lib/kubelet && rmdir pki && mkdir pki' 2>&1 </dev/null); rc=$?
flat "$out"
got=$(label_of /node/var/lib/kubelet/pki)
[ "$rc" = 0 ] && [ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "${got:-rc=$rc: $flat}"
[ $ok = yes ] || report_denials
