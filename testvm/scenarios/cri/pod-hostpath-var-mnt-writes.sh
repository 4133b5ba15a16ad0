# boot: cri
# expect: written, with the pod's categories
#
# /var/mnt is the layout's one pod-writable hostPath root. A pod made
# through the CRI at seLinuxOptions.level s0:c7,c8 writes a file there,
# and the file carries the pod's categories.
cri_ready
rm -f /var/mnt/cri-c7c8
cri_run --name writer --level s0:c7,c8 --mount /var/mnt:/data -- \
    sh -c 'echo written >/data/cri-c7c8 && cat /data/cri-c7c8'
label=$(stat -c %C /var/mnt/cri-c7c8 2>&1)
ok=no
[ "$cri_rc" = 0 ] && [ "$cri_out" = written ] && [ "$label" = system_u:object_r:var_mnt_t:s0:c7,c8 ] && ok=yes
report $ok "exit $cri_rc: ${cri_out:-no output}; the file: $label"
