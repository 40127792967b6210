#!/usr/bin/env bash
# Make sure a Docker daemon answers. Used by `make run`, `make test` and .ci/run.
# On Debian as root it installs Debian's docker.io if needed and starts dockerd in
# the background; elsewhere it explains what to install and stops.
set -euo pipefail

log=${OSGYM_DOCKERD_LOG:-/var/log/osgym-dockerd.log}
sock=/var/run/docker.sock

docker_ok() { command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; }

if docker_ok; then exit 0; fi

if [ ! -f /etc/debian_version ] || [ "$(id -u)" != 0 ]; then
  cat >&2 <<'MSG'
osgym needs a running Docker daemon and none answers.
  - Debian/Ubuntu as root: this script installs docker.io and starts dockerd for you.
  - Elsewhere: install Docker Engine (https://docs.docker.com/engine/install/), start it,
    and make sure `docker info` works for your user; then run this again.
MSG
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "installing Debian's docker.io ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "starting dockerd (log: $log) ..." >&2
  rm -f /var/run/docker.pid
  nohup dockerd >"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 120); do
  if [ -S "$sock" ] && docker_ok; then exit 0; fi
  sleep 0.5
done
echo "dockerd did not answer within 60 s; the end of $log:" >&2
tail -n 30 "$log" >&2 || true
exit 1
