# boot: reboot
# pod: s0:c5,c6 /cap/var/mnt:/host/mnt:rw
# expect: allow:EDQUOT
# needs: capacity/reboot-keeps-limits
#
# After the reboot the pod's next block is still refused.
sh -c "dd if=/dev/zero of=/host/mnt/after-reboot bs=4k count=1 2>&1 | grep -q 'quota exceeded' && echo EDQUOT"
