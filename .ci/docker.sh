#!/bin/sh
# A real Docker engine for the test suite: Debian's docker.io (dockerd), debootstrap (stand-in
# base images: no image registry is reachable) and docker-registry (a local registry for the
# pull/push/audit tests). Idempotent: installs what is missing, starts dockerd unless an engine
# already answers, and returns once it does. Needs root.
#
#   .ci/docker.sh                  # log: $DOCKERD_LOG (default /var/log/dockerd.log)
set -eu

log=${DOCKERD_LOG:-/var/log/dockerd.log}
data=${DOCKERD_DATA_ROOT:-/var/lib/docker}

missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
command -v docker-registry >/dev/null 2>&1 || missing="$missing docker-registry"
if [ -n "$missing" ]; then
    echo "docker.sh: installing$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

engine_answers() {
    docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

if engine_answers; then
    echo "docker.sh: engine $(docker version --format '{{.Server.Version}}') already answers"
    exit 0
fi

start() {
    # No iptables and no bridge: CI machines are often containers without the privileges those
    # need, and no test gives a container network.
    # setsid: its own session, so a Ctrl-C or the end of the calling job's process group
    # does not take the engine down with it.
    detach=""
    command -v setsid >/dev/null 2>&1 && detach=setsid
    $detach nohup dockerd --iptables=false --bridge=none --data-root="$data" --storage-driver="$1" \
        >>"$log" 2>&1 </dev/null &
    pid=$!
    i=0
    while [ $i -lt 60 ]; do
        if engine_answers; then
            echo "docker.sh: dockerd (pid $pid, $1) answers after ${i}s; log in $log"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 1
        i=$((i + 1))
    done
    kill "$pid" 2>/dev/null || true
    return 1
}

# overlay2 shares layers; vfs works anywhere but copies every layer in full.
start "${DOCKERD_STORAGE_DRIVER:-overlay2}" || {
    echo "docker.sh: dockerd with overlay2 did not come up; retrying with vfs (tail of $log follows)" >&2
    tail -5 "$log" >&2 || true
    start vfs
} || {
    echo "docker.sh: dockerd did not answer within 60 s; see $log" >&2
    tail -20 "$log" >&2 || true
    exit 1
}
