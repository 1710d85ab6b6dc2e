#!/usr/bin/env bash
# Starts a Docker engine for the tests where none answers (CI machines have no init system).
# Storage: overlay2 where the kernel mounts overlays on Docker's disk (a container is then
# created in milliseconds), else vfs (every container a full copy of its image: seconds
# each); PROBE_DOCKER_STORAGE=vfs|overlay2 forces one.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
# A dockerd killed with the previous session leaves its pid files behind.
if ! pgrep -x dockerd >/dev/null 2>&1; then
  rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid
fi

# Whether an overlay mounts on the filesystem that holds /var/lib/docker.
overlay_works() {
  mkdir -p /var/lib/docker
  local probe
  probe="$(mktemp -d /var/lib/docker/.overlay-probe.XXXXXX)" || return 1
  mkdir -p "$probe"/{lower,upper,work,merged}
  local ok=1
  if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" 2>/dev/null; then
    umount "$probe/merged" && ok=0
  fi
  rm -rf "$probe"
  return "$ok"
}

start() {
  nohup dockerd --iptables=false --bridge=none --storage-driver="$1" >/tmp/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then echo "dockerd is up (storage driver $1)"; return 0; fi
    # An engine that exited (e.g. a driver this machine refuses) will not answer.
    if ! kill -0 $! 2>/dev/null; then return 1; fi
    sleep 1
  done
  kill $! 2>/dev/null || true
  return 1
}

driver="${PROBE_DOCKER_STORAGE:-}"
if [ -z "$driver" ]; then
  if overlay_works; then driver=overlay2; else driver=vfs; fi
fi
if start "$driver"; then exit 0; fi
if [ "$driver" != vfs ] && [ -z "${PROBE_DOCKER_STORAGE:-}" ]; then
  echo "dockerd did not start with $driver; trying vfs" >&2
  sleep 2
  if start vfs; then exit 0; fi
fi
echo "dockerd did not start; its log:" >&2
tail -50 /tmp/dockerd.log >&2
exit 1
