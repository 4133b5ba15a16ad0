#!/bin/sh
# kubens start|stop: the mount namespace the container runtime and kubelet
# share (kubens.service runs this). Installed by semanifest.
#
# start: pin a namespace at $KUBENSMNT (default /run/kubens/mnt), or reuse
#   the one already pinned there, and publish KUBENSMNT in /run/kubens/env
#   for the runtime units (their kubens drop-ins read it). The namespace is
#   a copy of the host's with slave propagation: mounts the host makes
#   later under shared mounts (/var/mnt) appear inside it, and mounts made
#   inside it never appear on the host.
# stop: withdraw /run/kubens/env, so units started from now on run on the
#   host. The namespace stays pinned: processes still inside it keep their
#   mounts, and a later start reuses it instead of splitting the runtime
#   across two namespaces.
set -eu
mnt=${KUBENSMNT:-/run/kubens/mnt}
env=/run/kubens/env
case "$mnt" in
/?*/?*) ;;
*)
    echo "kubens: KUBENSMNT=$mnt: need an absolute path below a directory" >&2
    exit 2
    ;;
esac
dir=${mnt%/*}

pinned() {
    [ "$(stat -f -c %T -- "$mnt" 2>/dev/null)" = nsfs ]
}

case "${1:-}" in
start)
    if pinned; then
        echo "kubens: reusing the mount namespace pinned at $mnt"
    else
        mkdir -p -- "$dir"
        # unshare pins a namespace only on a mount that does not propagate:
        # make the directory a mount of its own, and private.
        if ! mountpoint -q -- "$dir"; then
            mount --bind -- "$dir" "$dir"
        fi
        mount --make-private -- "$dir"
        touch -- "$mnt"
        unshare --mount="$mnt" --propagation slave true
        echo "kubens: pinned a new mount namespace at $mnt"
    fi
    mkdir -p -- "${env%/*}"
    printf 'KUBENSMNT=%s\n' "$mnt" >"$env.tmp"
    mv -f -- "$env.tmp" "$env"
    ;;
stop)
    rm -f -- "$env"
    ;;
*)
    echo "usage: kubens start|stop" >&2
    exit 2
    ;;
esac
