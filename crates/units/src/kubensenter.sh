#!/bin/sh
# kubensenter COMMAND [ARG]...: run COMMAND in the kubens mount namespace.
# Installed by semanifest; the runtime units' kubens drop-ins start their
# command through it.
#
# The namespace is the one pinned at $KUBENSMNT, which kubens.service writes
# into /run/kubens/env while it is active. Without KUBENSMNT (kubens.service
# disabled or stopped), COMMAND runs in the host's namespace, as it would
# without kubens. With KUBENSMNT naming no pinned namespace, it does the
# same and says so: a runtime that does not start is worse than one whose
# mounts the host can see.
if [ "$#" -eq 0 ]; then
    echo "usage: kubensenter COMMAND [ARG]..." >&2
    exit 2
fi
if [ -z "${KUBENSMNT:-}" ]; then
    exec "$@"
fi
if [ "$(stat -f -c %T -- "$KUBENSMNT" 2>/dev/null)" != nsfs ]; then
    echo "kubensenter: $KUBENSMNT is not a pinned mount namespace; starting $1 in the host's namespace" >&2
    exec "$@"
fi
exec nsenter --mount="$KUBENSMNT" -- "$@"
