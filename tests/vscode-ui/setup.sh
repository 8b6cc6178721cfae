#!/bin/sh
# tests/vscode-ui/setup.sh: install a real VS Code for 'make test-vscode' into
# a cache folder outside the checkout, reused between runs:
#
#   CACHE/npm/node_modules/code-server   code-server 4.100.3 (VS Code 1.100.3)
#   CACHE/npm/node_modules/puppeteer-core
#   CACHE/bin/code-server                its command (a link to the above)
#   CACHE/installed                      what is installed (the lockfile's hash)
#
# CACHE is $TDEBUG_VSCODE_UI_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/tdebug/vscode-ui.
# Both packages are pinned by package-lock.json beside this script (npm ci),
# VS Code's own dependencies by code-server's npm-shrinkwrap.json.  A second
# run with the same lockfile does nothing.  The browser is Debian's chromium
# (tools/deps.sh --vscode-ui).
#
# Why not a plain 'npm install code-server': its postinstall runs 'npm
# install' in lib/vscode, whose native modules download prebuilt binaries
# (and @vscode/ripgrep downloads rg) from outside the npm registry.  So every
# script is skipped (--ignore-scripts), and what the postinstall does is done
# here: VS Code's dependencies from its shrinkwrap, the native modules built
# with node-gyp against the installed node's headers (npm_config_nodedir),
# Debian's rg in place of the download, and the postinstall's symlinks.
# code-server 4.100.3 is the last release whose engines.node is 20, the node
# Debian 12 machines have here.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${TDEBUG_VSCODE_UI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tdebug/vscode-ui}

say() { echo "vscode-ui: $*"; }
die() { echo "vscode-ui: $*" >&2; exit 1; }

"$root/tools/deps.sh" --vscode-ui

node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] ||
    die "code-server 4.100.3 needs node 20, and node is $(node --version) (install node 20, or change the pinned code-server in $here/package.json)"
nodedir=${npm_config_nodedir:-$(dirname "$(dirname "$(command -v node)")")}
[ -f "$nodedir/include/node/node_api.h" ] ||
    die "cannot build code-server's native modules: no node headers in '$nodedir/include/node' (install node's headers, or set npm_config_nodedir)"

# One install at a time (two checkouts may share the cache).
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

want=$(cat "$here/package-lock.json" "$0" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$cache/installed" 2>/dev/null)" = "$want" ] &&
   [ -f "$cache/npm/node_modules/code-server/out/node/entry.js" ]; then
    say "code-server and puppeteer-core are installed in $cache"
    exit 0
fi

say "installing code-server and puppeteer-core into $cache (a few minutes, about 350 MB)"
start=$(date +%s)
# A fresh folder, moved into place at the end: an interrupted install leaves
# no half-installed VS Code behind.
work="$cache/npm.new"
rm -rf "$work"
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$work/"
export npm_config_cache="$cache/npm-cache" npm_config_nodedir="$nodedir"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
npm_ci() { npm ci --ignore-scripts --loglevel=error "$@"; }

(cd "$work" && npm_ci)
cs="$work/node_modules/code-server"
vs="$cs/lib/vscode"
# VS Code's own dependencies, as code-server's postinstall installs them (the
# built-in extensions' shared dependency, typescript, serves only
# TypeScript's language features: not needed here).  Its shrinkwrap predates
# npm 7's installing of peer dependencies (tslib, a peer of
# @microsoft/applicationinsights-core-js, is not in it), so 'npm ci' of a
# current npm refuses it unless peers are left to the packages, as then.
(cd "$vs" && npm_ci --omit=dev --legacy-peer-deps)

# The native modules, built from their sources.  node-gyp is npm's own.
gyp=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")/node_modules/node-gyp/bin/node-gyp.js
[ -f "$gyp" ] || die "cannot find npm's node-gyp (looked for '$gyp')"
build() {
    say "building $(basename "$1")"
    (cd "$1" && node "$gyp" rebuild --loglevel=error >build.log 2>&1) ||
        { tail -30 "$1/build.log" >&2; die "cannot build the native module in '$1' (its log: above)"; }
}
for m in @vscode/spdlog node-pty native-watchdog kerberos @vscode/deviceid; do
    build "$vs/node_modules/$m"
done
# argon2 (code-server's password check) is found by node-pre-gyp in
# lib/binding/: its 'rebuild' builds from source and puts it there.
say "building argon2"
(cd "$work/node_modules/argon2" &&
    node ../@mapbox/node-pre-gyp/bin/node-pre-gyp rebuild --loglevel=error >build.log 2>&1) ||
    { tail -30 "$work/node_modules/argon2/build.log" >&2; die "cannot build argon2"; }
# @parcel/watcher's binary is its platform package from npm (optional
# dependency, installed by npm ci): nothing to build.

# Debian's rg where @vscode/ripgrep's postinstall would have downloaded one.
mkdir -p "$vs/node_modules/@vscode/ripgrep/bin"
ln -sf "$(command -v rg)" "$vs/node_modules/@vscode/ripgrep/bin/rg"

# code-server's postinstall's links.
ln -sfn node_modules "$vs/node_modules.asar"
ln -sfn code-linux.sh "$vs/bin/remote-cli/code-server"
ln -sfn browser-linux.sh "$vs/bin/helpers/browser.sh"

node "$cs/out/node/entry.js" --version >/dev/null ||
    die "the installed code-server does not start (node $cs/out/node/entry.js --version)"

rm -rf "$cache/npm" "$cache/npm-cache"
mv "$work" "$cache/npm"
mkdir -p "$cache/bin"
ln -sfn ../npm/node_modules/code-server/out/node/entry.js "$cache/bin/code-server"
echo "$want" >"$cache/installed"
say "installed in $(($(date +%s) - start)) s: $(du -sh "$cache" | cut -f1) in $cache"
