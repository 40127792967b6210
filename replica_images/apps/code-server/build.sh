#!/usr/bin/env bash
# The Dockerfile's code-server stage: compile code-server's native modules in /opt/code-server
# against Debian's nodejs 18 (ABI 108, the Node the replica runs) with Debian's node-gyp,
# which reads Debian's headers (/usr/include/nodejs): nothing is downloaded. Then keep only
# the .node files and check that each loads.
#
# Built: argon2 (code-server loads it at start, for password auth), @vscode/spdlog (logs),
# native-watchdog (extension host), node-pty (the integrated terminal). Not built:
# @parcel/watcher ships an N-API binary for linux-x64 glibc, which loads in any Node;
# kerberos (Kerberos proxy auth only, loaded lazily, would need libkrb5-dev).
set -euo pipefail
cd /opt/code-server

build() {  # build DIR [node-gyp args]: compile, then drop everything under build/ but the .node files
  local dir=$1; shift
  (cd "$dir" && node-gyp rebuild --jobs=max "$@" >/tmp/node-gyp.log 2>&1) \
    || { tail -40 /tmp/node-gyp.log; echo "node-gyp failed in $dir" >&2; exit 1; }
  local keep; keep=$(mktemp -d)
  mv "$dir"/build/Release/*.node "$keep"/ 2>/dev/null || true
  rm -rf "$dir/build"
  if compgen -G "$keep/*.node" >/dev/null; then mkdir -p "$dir/build/Release" && mv "$keep"/*.node "$dir/build/Release/"; fi
  rmdir "$keep"
}

# argon2 finds its binary with node-pre-gyp's naming (package.json "binary"), not build/Release.
build node_modules/argon2 --module_name=argon2 --napi_build_version=3 \
  --module_path="$PWD/node_modules/argon2/lib/binding/napi-v3"
rm -rf node_modules/argon2/build
build lib/vscode/node_modules/@vscode/spdlog
build lib/vscode/node_modules/native-watchdog
build lib/vscode/node_modules/node-pty

# VS Code runs the rg at @vscode/ripgrep's bin/ (search, quick open); the image's is Debian's.
mkdir -p lib/vscode/node_modules/@vscode/ripgrep/bin
ln -sf /usr/bin/rg lib/vscode/node_modules/@vscode/ripgrep/bin/rg

node -e 'require("argon2")'
(cd lib/vscode && node -e 'for (const m of ["@vscode/spdlog", "native-watchdog", "node-pty", "@parcel/watcher"]) require(m)')
# code-server starts (it loads argon2 and its server code) and says its version.
node out/node/entry.js --version | grep -q "^$(node -p 'require("./package.json").version') "
