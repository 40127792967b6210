#!/usr/bin/env bash
# Build the replica base image without a registry: debootstrap a minimal
# Debian root filesystem and `docker import` it as osgym/base:<suite>.
# Usage: build.sh [TAG] [SUITE]   (env DEBIAN_MIRROR overrides debootstrap's default mirror)
set -euo pipefail
tag=${1:-osgym/base:bookworm}
suite=${2:-bookworm}
if ! command -v debootstrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  else
    echo "debootstrap is missing: install it (apt-get install debootstrap) and retry" >&2; exit 1
  fi
fi
root=$(mktemp -d /tmp/osgym-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase "$suite" "$root" ${DEBIAN_MIRROR:-} >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar --numeric-owner -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$tag" >/dev/null
echo "$tag"
