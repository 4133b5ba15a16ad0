# boot: systemd
# expect: tmpfs, file on it labelled
# control: layout-units-off
#
# Each tmpfs mount unit's path is a tmpfs with the unit's context=, and a
# file made on it gets the same label (enforcing, the kernel checks
# `filesystem associate` for it).
seen= ok=yes
while read -r path context; do
    probe=$path/testvm-probe
    # Not `:`: a failed redirection on a special builtin ends the script.
    true >"$probe" 2>/dev/null || ok=no
    got=$(stat -f -c %T "$path" 2>&1; stat -c %C "$path" "$probe" 2>&1)
    case "$nl$got$nl" in
        *"${nl}tmpfs$nl$context$nl$context$nl"*) ;;
        *) ok=no ;;
    esac
    seen="$seen $path: $(printf '%s' "$got" | tr '\n' ' ')"
done </usr/lib/testvm/tmpfs
report $ok "${seen:- no tmpfs unit applies}"
