# boot: systemd
# expect: every declared directory labelled
# control: layout-units-off
#
# Every directory the layout declares (but those the image holds through a
# symlink) exists with the label `semanifest lookup` gives it in the
# built file_contexts.
paths= count=0
while read -r path context; do paths="$paths $path"; count=$((count + 1)); done </usr/lib/testvm/expected
expected="$count dirs labelled"
# shellcheck disable=SC2086 # the layout's paths have no blanks
observed=$(stat -c '%n %F %C' $paths 2>&1)
wrong=
while read -r path context; do
    case "$nl$observed$nl" in
        *"$nl$path directory $context$nl"*) ;;
        *) wrong="$wrong $path" ;;
    esac
done </usr/lib/testvm/expected
if [ -z "$wrong" ]; then
    report yes "$count of $count as declared"
else
    report no "wrong or missing:$wrong"
    printf '%s\n' "$observed" | sed 's/^/testvm-stat: /'
fi
