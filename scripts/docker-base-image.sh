#!/usr/bin/env bash
# Builds the Docker base image the `docker` sandbox runs repo_path tasks in (no registry
# is reachable, so it is bootstrapped from Debian's packages): Debian bookworm with
# python3, pytest, `python`, git, flake8 (SWE-agent's edit lint in replays), pip (a task
# image rebased on this stand-in still runs its `pip install` lines, Python's
# EXTERNALLY-MANAGED marker removed as a task's python image has none) and this machine's
# Node.js binary (the same version the local sandbox uses).
# Usage: scripts/docker-base-image.sh [IMAGE]   (default probe-base:bookworm)
set -euo pipefail
image="${1:-probe-base:bookworm}"
if docker image inspect "$image" >/dev/null 2>&1; then
  # Images from before the sandbox ran as uid 1000 had a root directory only root could enter.
  # Images from before replays linted SWE-agent's edits had no flake8; from before issue 38, no pip.
  if docker run --rm --user 1000:1000 --network none "$image" sh -c 'flake8 --version && pip --version' >/dev/null 2>&1; then
    echo "docker image $image already present"
    exit 0
  fi
  echo "docker image $image is not usable by uid 1000 or lacks flake8 or pip; rebuilding it"
  docker image rm -f "$image" >/dev/null
fi
root="$(mktemp -d)"
# mktemp makes it 0700, and it becomes the image's `/`: the sandbox user must enter it.
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
# The Debian archive this machine's apt already uses (first URI of its sources).
mirror="${DEBIAN_MIRROR:-$( (grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'; \
  grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}') 2>/dev/null | grep -v security | head -n 1 || true)}"
debootstrap --variant=minbase --include=python3,python3-pytest,python-is-python3,python3-pip,git,flake8,libstdc++6,ca-certificates,procps \
  bookworm "$root" ${mirror:+"$mirror"} >/dev/null
install -m 0755 "$(readlink -f "$(command -v node)")" "$root/usr/local/bin/node"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8' - "$image" >/dev/null
echo "built docker image $image"
