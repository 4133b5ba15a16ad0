# boot: reboot
# expect: sealed 0 then 1, examined 1, no drift
#
# The boot unit's relabel, enforcing, as init_t (what runs a unit): the
# first pass stores the subtree digests and the operand's seal (this
# boot's plain relabel removed them), the second finds the seal holding
# and compiles and walks nothing; --check still sees no drift. The first
# pass is the control: no seal yet, so it walks.
skip_as_system() {
    runcon system_u:system_r:init_t:s0 semanifest relabel --type-only --skip-unchanged --json \
        --file-contexts /etc/semanifest/file_contexts /var 2>/dev/null </dev/null
}
dmesg -c >/dev/null
out=$(skip_as_system); rc1=$?
first=$(json_field sealed "$out")
out=$(skip_as_system); rc2=$?
sealed=$(json_field sealed "$out"); examined=$(json_field examined "$out")
semanifest relabel --type-only --check --file-contexts /etc/semanifest/file_contexts /var >/dev/null 2>&1; rc3=$?
[ "$rc1 $rc2 $first $sealed $examined $rc3" = "0 0 0 1 1 0" ] && ok=yes || ok=no
report $ok "rc=$rc1/$rc2, sealed ${first:-?} then ${sealed:-?}, examined ${examined:-?}, check rc=$rc3"
[ $ok = yes ] || report_denials
