#!/usr/bin/env bash
# Make sure stress-ng is installed: `make suite-check` runs every apps-tier template again under
# `stress-ng --cpu 4` (scripts/suite_check.py). On Debian as root it installs Debian's package if
# needed; elsewhere it says what to install and stops.
set -euo pipefail

if command -v stress-ng >/dev/null 2>&1; then
  exit 0
fi

if [ ! -f /etc/debian_version ] || [ "$(id -u)" != 0 ]; then
  echo "make suite-check needs stress-ng: install it (Debian: apt-get install stress-ng), then run this again" >&2
  exit 1
fi

echo "installing Debian's stress-ng ..." >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng >/dev/null
