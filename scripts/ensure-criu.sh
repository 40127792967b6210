#!/usr/bin/env bash
# Make sure CRIU 4.2 is installed apart from the system, under $OSGYM_CRIU_PREFIX (default /opt/osgym/criu),
# for checkpointing warmed replicas (docs/design-notes.md, "Reset by restore: the route"). Used by `make criu`.
#
# Debian bookworm's criu (3.17) fails `criu check` on recent kernels (vDSO) and trixie's 4.1 cannot restore
# a session D-Bus socket (CRIU issue 2687, fixed in 4.2), so this builds 4.2 from Debian's source package:
#   - the source comes from unstable's deb-src through a PRIVATE apt configuration under $OSGYM_CRIU_CACHE
#     (default /var/cache/osgym/criu-apt): the system's sources and package lists are never touched;
#   - the build dependencies are bookworm's own packages, installed with apt-get;
#   - osgym's patches in scripts/criu/*.patch are applied (rlimits-from-proc.patch: dump without
#     CAP_SYS_RESOURCE, which containers like this machine's withhold even from root);
#   - it keeps its cache of the kernel's features in $kdat_dir (below), a tmpfs on every Debian host;
#   - the result is checked with `criu check` before it is installed, with a stamp naming the source,
#     the patches and that directory, so that a changed patch rebuilds it.
# It also installs scripts/criu/runc-criu as $prefix/bin/runc-criu, the runc wrapper that dockerd runs
# replicas under to checkpoint them, with CRIU's options for dump and restore in $prefix/etc, and builds its
# helpers scripts/criu/ksm-exec.c and restore-netns.c as $prefix/bin/ksm-exec and restore-netns.
# A second run with all of it in place is a no-op. As root on Debian only; elsewhere it says what to do.
set -euo pipefail

prefix=${OSGYM_CRIU_PREFIX:-/opt/osgym/criu}
cache=${OSGYM_CRIU_CACHE:-/var/cache/osgym/criu-apt}
want=4.2  # the minor series that restores everything a replica holds
criu=$prefix/sbin/criu
stamp=$prefix/share/osgym-criu.stamp
# Where CRIU keeps what it learnt of the kernel (criu.kdat), compiled in as RUNDIR. CRIU keeps it only on a tmpfs
# (a reboot must drop it) and its default, /run, is not one on every host (here it is ext4): without it every
# CRIU run probes the kernel again, about 55 ms of each restore. runc-criu names it (its `kdat=` line, read here
# so the two cannot differ), makes it root's with mode 0700 and refuses one that is not.
patches=$(cd "$(dirname "$0")/criu" && pwd)
kdat_dir=$(sed -n 's/^kdat=//p' "$patches/runc-criu")
case $kdat_dir in /*) ;; *) echo "ensure-criu: no absolute kdat= line in $patches/runc-criu" >&2; exit 1 ;; esac
patch_id=$(cat "$patches"/*.patch | sha256sum | cut -c1-16)

fail() { echo "ensure-criu: $*" >&2; exit 1; }
# what goes when the script ends, however it ends (fail() exits)
scratch=()
trap 'rm -rf "${scratch[@]}"' EXIT

# runc-criu (the runtime dockerd is given) and CRIU's options for dump and restore: copied whenever they differ
install_support() {
  local f tmp
  tmp=$(mktemp)
  scratch+=("$tmp")
  for f in bin/runc-criu:0755 etc/dump.conf:0644 etc/restore.conf:0644; do
    local rel=${f%%:*} mode=${f##*:}
    # restore.conf names its action script by the prefix it is installed under
    sed "s|@PREFIX@|$prefix|g" "$patches/$(basename "$rel")" >"$tmp"
    cmp -s "$tmp" "$prefix/$rel" && continue
    install -D -m "$mode" "$tmp" "$prefix/$rel" || fail "cannot install $prefix/$rel (run this as root)"
  done
  rm -f "$tmp"
  # ksm-exec, which runc-criu runs runc restore through, and restore-netns, CRIU's action script on a restore:
  # built here, from the sources beside them
  local helper
  for helper in ksm-exec restore-netns; do
    cmp -s "$patches/$helper.c" "$prefix/share/$helper.c" && [ -x "$prefix/bin/$helper" ] && continue
    command -v cc >/dev/null || fail "building $prefix/bin/$helper needs a C compiler (Debian: apt-get install build-essential)"
    mkdir -p "$prefix/bin" "$prefix/share"
    cc -O2 -Wall -Werror -o "$prefix/bin/$helper.tmp" "$patches/$helper.c" || fail "cannot build $helper.c"
    mv "$prefix/bin/$helper.tmp" "$prefix/bin/$helper"
    install -m 0644 "$patches/$helper.c" "$prefix/share/$helper.c"
  done
  if [ ! -x /usr/sbin/runc ]; then  # what runc-criu runs: Debian's runc, which docker.io brings
    if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
      echo "ensure-criu: installing Debian's runc ..." >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 \
        apt-get install -y -qq --no-install-recommends runc >/dev/null || fail "apt-get install runc failed"
    else
      fail "runc-criu runs /usr/sbin/runc, which is missing: install runc (Debian: apt-get install runc)"
    fi
  fi
}
build_deps=(build-essential pkg-config python3 libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libprotobuf-dev
            libnl-3-dev libnet1-dev libcap-dev libbsd-dev libnftables-dev)

# Reset by restore drives Docker's checkpoints, which need the daemon's experimental mode, with runc-criu
# registered as a runtime: both go into /etc/docker/daemon.json. dockerd reloads runtimes on SIGHUP, but
# experimental mode only on a restart, which would stop every container: done when none runs, else said.
register_with_docker() {
  mkdir -p /etc/docker
  RUNC_CRIU="$prefix/bin/runc-criu" python3 - <<'PY'
import json, os
path = "/etc/docker/daemon.json"
cfg = json.load(open(path)) if os.path.exists(path) else {}
want = {"path": os.environ["RUNC_CRIU"]}
if cfg.get("experimental") is True and cfg.get("runtimes", {}).get("runc-criu") == want:
    raise SystemExit(0)
cfg["experimental"] = True
cfg.setdefault("runtimes", {})["runc-criu"] = want
with open(path + ".osgym-tmp", "w") as f:
    f.write(json.dumps(cfg, indent=2) + "\n")
os.replace(path + ".osgym-tmp", path)
PY
  local pid
  pid=$(cat /var/run/docker.pid 2>/dev/null || true)  # the main daemon's: not a test's second dockerd
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  [ "$(timeout 10 docker info --format '{{.ExperimentalBuild}}' 2>/dev/null)" = true ] && { kill -HUP "$pid"; return 0; }
  if [ -n "$(timeout 10 docker ps -q 2>/dev/null)" ]; then
    echo "ensure-criu: restart dockerd to turn on its experimental mode, which reset by restore needs" \
         "(containers run now, so it was not restarted)" >&2
    return 0
  fi
  echo "ensure-criu: restarting dockerd (no container runs) for its experimental mode ..." >&2
  kill -TERM "$pid" || true
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  bash "$(dirname "$0")/ensure-docker.sh"
}

installed_ok() {
  [ -x "$criu" ] && [ "$(cat "$stamp" 2>/dev/null)" = "patches $patch_id rundir $kdat_dir" ] || return 1
  "$criu" --version 2>/dev/null | grep -q "^Version: ${want//./\\.}\(\.\|$\)" || return 1
  "$criu" check >/dev/null 2>&1
}

if installed_ok; then install_support; register_with_docker; exit 0; fi

if [ ! -f /etc/debian_version ] || [ "$(id -u)" != 0 ]; then
  cat >&2 <<MSG
ensure-criu: osgym's reset by restore needs CRIU $want at $criu and it is not there.
  - Debian as root: this script builds it from Debian's source package for you.
  - Elsewhere: build CRIU $want (https://criu.org/Installation) with scripts/criu/*.patch applied, install
    its criu as $criu, and check that \`$criu check\` says "Looks good."; then run this again as root.
MSG
  exit 1
fi

if [ -x "$criu" ]; then
  echo "ensure-criu: $criu is there but not a working CRIU $want built as this script builds it" \
       "(patches $patch_id, rundir $kdat_dir; found $("$criu" --version 2>&1 | head -1)," \
       "stamp: $(cat "$stamp" 2>/dev/null || echo none)); rebuilding" >&2
fi

# the private apt configuration: unstable's sources only, its own lists and cache
mkdir -p "$cache/etc/sources.list.d" "$cache/etc/preferences.d" "$cache/state/lists/partial" \
         "$cache/cache/archives/partial" "$cache/src"
chown _apt "$cache/src" 2>/dev/null || true  # apt downloads as _apt where it can
cat >"$cache/etc/sources.list" <<'LIST'
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main
LIST
apt_private=(-o "Dir::Etc::sourcelist=$cache/etc/sources.list" -o "Dir::Etc::sourceparts=$cache/etc/sources.list.d"
             -o "Dir::Etc::preferencesparts=$cache/etc/preferences.d" -o "Dir::State=$cache/state"
             -o "Dir::State::status=/var/lib/dpkg/status" -o "Dir::Cache=$cache/cache" -o "APT::Get::List-Cleanup=0")

orig=$(ls "$cache/src"/criu_"$want".*.orig.tar.* 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$orig" ]; then
  echo "ensure-criu: downloading CRIU's source from Debian unstable (private apt lists in $cache) ..." >&2
  apt-get "${apt_private[@]}" update -qq || fail "apt-get update of unstable's deb-src failed (see above); is deb.debian.org reachable?"
  version=$(apt-cache "${apt_private[@]}" showsrc criu 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
  [ -n "$version" ] || fail "unstable's Sources index lists no criu package"
  case "$version" in
    "$want".*) ;;
    *) fail "unstable has criu $version, not $want.x: check that it still restores a replica, then set want= in $0" ;;
  esac
  (cd "$cache/src" && apt-get "${apt_private[@]}" source --download-only --tar-only -qq "criu=$version") \
    || fail "apt-get source --download-only criu=$version failed (see above)"
  orig=$(ls "$cache/src"/criu_"$want".*.orig.tar.* 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$orig" ] || fail "apt-get source downloaded no criu_$want.*.orig.tar.* into $cache/src"
fi

missing=()
for p in "${build_deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "ensure-criu: installing bookworm's build dependencies: ${missing[*]} ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || fail "apt-get install ${missing[*]} failed (see above)"
fi

work=$(mktemp -d /var/tmp/osgym-criu-build.XXXXXX)
scratch+=("$work")
tar -xf "$orig" -C "$work" || fail "cannot unpack $orig"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
for p in "$patches"/*.patch; do
  patch -d "$src" -p1 --quiet --forward <"$p" || fail "$(basename "$p") does not apply to $(basename "$orig")"
done
echo "ensure-criu: building $(basename "$src") (about 30 s on two cores; log: $work/build.log) ..." >&2
if ! make -C "$src" -j"$(nproc)" criu RUNDIR="$kdat_dir" >"$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log" >&2
  scratch=()  # the log stays for the reader
  fail "building CRIU failed; the whole log is in $work/build.log"
fi
built=$src/criu/criu
"$built" --version | grep -q "^Version: ${want//./\\.}" || fail "the build in $src is not CRIU $want"
if ! check=$("$built" check 2>&1); then
  echo "$check" >&2
  fail "the CRIU just built fails \`criu check\` on this kernel ($(uname -r)); not installed"
fi
install -D -m 0755 "$built" "$criu"
mkdir -p "$(dirname "$stamp")" && echo "patches $patch_id rundir $kdat_dir" >"$stamp"
installed_ok || fail "$criu was installed but does not pass \`criu check\`"
install_support
register_with_docker
echo "ensure-criu: installed $("$criu" --version | head -1) at $criu" >&2
