#!/usr/bin/env bash
# Host side of the apps tier's VS Code (code-server), run by osgym/replicas/images.py's
# ensure_code_server: fetch the pinned code-server release and its JavaScript dependencies
# from the npm registry and pack them into OUT/code-server.tar.gz for the Dockerfile's
# code-server stage, which compiles the native modules against Debian's Node 18.
#
# Why here and not in `docker build`: npm over https fails TLS inside build containers (the
# TLS is re-signed; the host trusts it, containers do not), as pip does.
# Why --ignore-scripts: code-server's postinstall runs `npm install` in lib/vscode, whose
# scripts download a ripgrep binary from GitHub and compile natives against the host's Node
# (20 here, ABI 115; the replica runs Debian's 18, ABI 108). Instead: every dependency comes
# from the lockfiles code-server ships (npm ci), nothing runs but the two steps of the
# postinstall that need no network (reproduced below), natives are built in the image and
# ripgrep is Debian's.
#
# Usage: fetch.sh VERSION-FILE OUT-DIR
set -euo pipefail

pin=$1 out=$2
version=$(sed -n 's/^version=//p' "$pin")
integrity=$(sed -n 's/^integrity=//p' "$pin")
[ -n "$version" ] && [ -n "$integrity" ] || { echo "$pin: needs version= and integrity= lines" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/osgym-code-server.XXXXXX")
trap 'rm -rf "$work"' EXIT
export npm_config_cache=${npm_config_cache:-$work/npm-cache}
npm_flags=(--ignore-scripts --omit=dev --legacy-peer-deps --no-audit --no-fund --loglevel=error
           --fetch-timeout=60000 --engine-strict=false)

cd "$work"
npm pack --loglevel=error --fetch-timeout=60000 --pack-destination "$work" "code-server@$version" >/dev/null
tgz="$work/code-server-$version.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
[ "$got" = "$integrity" ] || { echo "code-server-$version.tgz: integrity $got, pinned $integrity" >&2; exit 3; }
mkdir pkg && tar -xzf "$tgz" -C pkg --strip-components=1 --no-same-owner

# The three npm-shrinkwrap.json files code-server ships pin the dependencies. `npm install`,
# as code-server's postinstall runs it, not `npm ci`: lib/vscode's lockfile lacks
# @vscode/windows-ca-certs (a Windows-only optional dependency of @vscode/proxy-agent), so
# npm ci refuses it; npm install resolves that one and takes the rest from the lockfile.
(cd pkg && npm install "${npm_flags[@]}")
(cd pkg/lib/vscode && npm install "${npm_flags[@]}")
(cd pkg/lib/vscode/extensions && npm install "${npm_flags[@]}" && node ./postinstall.mjs >/dev/null)

# What code-server's postinstall.sh does besides `npm install` (offline): node_modules.asar,
# the remote CLI and the browser helper under their Linux names.
ln -s node_modules pkg/lib/vscode/node_modules.asar
ln -s code-linux.sh pkg/lib/vscode/bin/remote-cli/code-server
ln -s browser-linux.sh pkg/lib/vscode/bin/helpers/browser.sh

# Binaries for other systems that npm unpacked: Windows-only modules, other platforms'
# @parcel/watcher prebuilds (its linux-x64 glibc one is N-API, so it loads in any Node and
# is kept), and @vscode/ripgrep's bin/ (its postinstall would download rg; the image links
# Debian's).
rm -rf pkg/lib/vscode/node_modules/@vscode/windows-* \
       pkg/lib/vscode/node_modules/@parcel/watcher/prebuilds/{win32,darwin}-* \
       pkg/lib/vscode/node_modules/@parcel/watcher/prebuilds/linux-x64/node.napi.musl.node \
       pkg/lib/vscode/extensions/ms-vscode.js-debug/src/*.node

# Source maps (135 of the 247 MB unpacked) serve only a debugger: the replica has none attached.
find pkg \( -name '*.js.map' -o -name '*.mjs.map' -o -name '*.ts.map' \) -type f -delete

mkdir -p "$out"
# Same bytes for the same pin: sorted names, fixed owner and mtime, gzip without a timestamp.
tar --sort=name --mtime=@315532800 --owner=0 --group=0 --numeric-owner -C pkg -cf - . \
  | gzip -n -6 > "$out/code-server.tar.gz.incomplete"
mv "$out/code-server.tar.gz.incomplete" "$out/code-server.tar.gz"
