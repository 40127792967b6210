#!/usr/bin/env bash
# Make sure a Docker daemon answers. Used by `make run`, `make test` and .ci/run.
# On Debian as root it installs Debian's docker.io if needed and starts dockerd in
# the background; elsewhere it explains what to install and stops.
set -euo pipefail

log=${OSGYM_DOCKERD_LOG:-/var/log/osgym-dockerd.log}
sock=/var/run/docker.sock

# The daemon of /var/run/docker.sock, by its pid file: a test's second dockerd is named dockerd too.
main_dockerd() { [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; }

docker_ok() { command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; }

# Debian's crun, registered with dockerd as the runtime `crun` (a pool's `runtime` or
# OSGYM_REPLICA_RUNTIME picks it). As root on Debian only; elsewhere replicas use the daemon's
# default. dockerd reloads its runtimes on SIGHUP, so running containers are not touched.
# crun 1.8 refuses a hybrid cgroup host (v1 controllers plus a cgroup2 mount) while the cgroup2
# hierarchy still holds a controller (here hugetlb, which no v1 hierarchy had taken): such
# controllers are given their own v1 hierarchy, as every other controller already has one.
ensure_crun() {
  [ -f /etc/debian_version ] && [ "$(id -u)" = 0 ] || return 0
  if ! command -v crun >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq crun >/dev/null || return 0
  fi
  local unified=/sys/fs/cgroup/unified/cgroup.controllers
  if [ -r "$unified" ] && [ -d /sys/fs/cgroup/memory ]; then
    for c in $(cat "$unified"); do
      mkdir -p "/sys/fs/cgroup/$c" && mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" \
        || echo "warning: cannot mount the $c cgroup controller as v1: crun will not run here" >&2
    done
  fi
  if ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"crun"'; then
    mkdir -p /etc/docker
    python3 - <<'PY'
import json, os
path = "/etc/docker/daemon.json"
cfg = json.load(open(path)) if os.path.exists(path) else {}
cfg.setdefault("runtimes", {}).setdefault("crun", {"path": "/usr/bin/crun"})
with open(path + ".osgym-tmp", "w") as f:
    f.write(json.dumps(cfg, indent=2) + "\n")
os.replace(path + ".osgym-tmp", path)
PY
    main_dockerd && kill -HUP "$(cat /var/run/docker.pid)" || true
    for _ in $(seq 1 20); do
      docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"crun"' && return 0
      sleep 0.5
    done
    echo "warning: dockerd did not pick up the crun runtime from /etc/docker/daemon.json" >&2
  fi
}

if docker_ok; then ensure_crun; exit 0; fi

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

if ! main_dockerd; then
  echo "starting dockerd (log: $log) ..." >&2
  rm -f /var/run/docker.pid
  nohup dockerd >"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 120); do
  if [ -S "$sock" ] && docker_ok; then ensure_crun; exit 0; fi
  sleep 0.5
done
echo "dockerd did not answer within 60 s; the end of $log:" >&2
tail -n 30 "$log" >&2 || true
exit 1
