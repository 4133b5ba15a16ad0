# boot: systemd
# expect: enforce=1, PID 1 init_t
#
# systemd loaded the policy, left kernel_t for init_t (init_exec_t), and
# runs its units there, enforcing.
ok=no
case "$enforce $pid1 $self" in
    "1 system_u:system_r:init_t:"*" system_u:system_r:init_t:"*) ok=yes ;;
esac
report $ok "enforce=$enforce, PID 1 $pid1, units $self"
