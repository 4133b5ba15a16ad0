# boot: systemd
# expect: containerd, kubelet active
# control: layout-units-off
#
# Both runtime units run. They require apply and the relabel: after a
# failed relabel (the control) they must not start. A masked requirement
# would not do: systemd's boot transaction starts them anyway, though a
# later manual restart is refused.
# shellcheck disable=SC2046 # one word per unit; systemctl separates them with blank lines
set -- $(systemctl show --value -p ActiveState containerd.service kubelet.service)
states="$*"
ok=no
[ "$states" = "active active" ] && ok=yes
report $ok "$states"
