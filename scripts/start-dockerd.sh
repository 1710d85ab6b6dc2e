#!/usr/bin/env bash
# Starts a Docker engine for the tests where none answers (CI machines have no init system).
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
# A dockerd killed with the previous session leaves its pid files behind.
if ! pgrep -x dockerd >/dev/null 2>&1; then
  rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid
fi
nohup dockerd --iptables=false --bridge=none --storage-driver=vfs >/tmp/dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then echo "dockerd is up"; exit 0; fi
  sleep 1
done
echo "dockerd did not start; its log:" >&2
tail -50 /tmp/dockerd.log >&2
exit 1
