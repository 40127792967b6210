#!/usr/bin/env bash
# Make sure npm is on PATH: building the apps tier fetches code-server (VS Code) from the npm
# registry on the host, once (osgym/replicas/images.py ensure_code_server). Used by
# `make images-apps`. On Debian as root it installs Debian's nodejs and npm if needed;
# elsewhere it says what to install and stops.
set -euo pipefail

if command -v npm >/dev/null 2>&1; then exit 0; fi

if [ ! -f /etc/debian_version ] || [ "$(id -u)" != 0 ]; then
  echo "building the apps tier needs npm (it fetches code-server once): install Node.js and npm, then run this again" >&2
  exit 1
fi

echo "installing Debian's nodejs and npm (for the apps tier's code-server) ..." >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
