# boot: fedora
# expect: var_mnt_t
# policy: fedora-module
#
# Fedora's file_contexts.subs_dist aliases /var/mnt to /mnt, so the module
# labels the hostPath root through its alias. A pod (container_t at
# s0:c3,c4) with /var/mnt as its hostPath volume writes x there, and the
# file it made is var_mnt_t (at the directory's level, s0: the store
# has `default_range file target low`).
rm -f /var/mnt/x
pod_run crun s0:c3,c4 /var/mnt:/host/mnt:rw '"/bin/checks", "write", "echo pod-wrote >/host/mnt/x && cat /host/mnt/x"'
check_line write || { rc=none out=$pod_out; }
got=$(label_of /var/mnt/x)
flat "$out"
case "$rc|$flat|$got" in
    "0|pod-wrote|"*:object_r:$expected:*) report yes "written; $got" ;;
    *)
        report no "pod rc=$rc: $flat; /var/mnt/x ${got:-no label}"
        find_avc "" "" ""
        [ -n "$avc" ] && echo "@@AVC|$scenario|$avc" ;;
esac
