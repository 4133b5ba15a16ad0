# boot: cri
# expect: 700; no drift on /var/lib/containerd; control: drift mode 0700 -> 0711
#
# containerd makes its root 0700 whenever it starts (Debian 12's package
# since the fix for CVE-2024-25621), and the layout declares that mode, so
# `apply --check`, run as the boot unit runs it, finds no drift on
# /var/lib/containerd once the runtime is up. The control checks against a
# copy of the layout that still says 0711: the same check must then report
# the drift.
cri_ready
mode=$(stat -c %a /var/lib/containerd)
unit=$(systemctl show -P FragmentPath semanifest-apply.service)
apply=$(sed -n 's/^ExecStart=-\{0,1\}//p' "$unit" | head -n1)
layout=$(echo "$apply" | sed -n 's/.*--layout \([^ ]*\).*/\1/p')
containerd_drift() {
    # shellcheck disable=SC2086 # the unit's command line, split as systemd does
    out=$($1 --check 2>&1); rc=$?
    case "$rc" in
        0|1) echo "$out" | grep "^drift /var/lib/containerd:" | sed 's|^drift /var/lib/containerd: ||' | tr '\n' ' ' | sed 's/ $//' ;;
        *) echo "check rc=$rc" ;;
    esac
}
drift=$(containerd_drift "$apply")
sed 's/^\( *\)mode: "0700" *# containerd.*/\1mode: "0711"/' "$layout" >/tmp/layout-0711.yaml
control=$(containerd_drift "$(echo "$apply" | sed "s|--layout $layout|--layout /tmp/layout-0711.yaml|")")
[ -n "$drift" ] && drift="drift $drift" || drift="no drift on /var/lib/containerd"
[ -n "$control" ] && control="drift $control" || control="no drift"
got="$mode; $drift; control: $control"
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got"
