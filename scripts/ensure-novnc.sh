#!/usr/bin/env bash
# Make sure the live view of `osgym serve` can run: the server serves Debian's noVNC page and relays its
# websocket to a replica's x11vnc itself (osgym/serving/liveview.py). Used by
# `make novnc` and `make test`. On Debian as root it installs Debian's packages if needed;
# elsewhere it says what to install and stops.
set -euo pipefail

if [ -f /usr/share/novnc/vnc.html ]; then
  exit 0
fi

if [ ! -f /etc/debian_version ] || [ "$(id -u)" != 0 ]; then
  echo "the live view of osgym serve needs noVNC (/usr/share/novnc):" \
       "install Debian's novnc (or your system's equivalent), then run this again" >&2
  exit 1
fi

echo "installing Debian's novnc ..." >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends novnc >/dev/null
