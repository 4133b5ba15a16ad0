# boot: systemd
# expect: ran
#
# The control of mountopts/noexec-var-mnt: the same binary, placed in
# containerd's directory (no mount flags of its own), runs.
dir=/var/lib/containerd
cp /bin/true "$dir/testvm-exec" && chmod 0755 "$dir/testvm-exec"
out=$("$dir/testvm-exec" 2>&1); rc=$?
rm -f "$dir/testvm-exec"
[ $rc = 0 ] && got=ran || got="rc=$rc $out"
[ "$got" = "$expected" ] && ok=yes || ok=no
report $ok "$got"
