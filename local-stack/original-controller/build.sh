#!/usr/bin/env bash
# Builds the original multi-platform controller once, from its unmodified source, as the peer
# benchmark does, and caches the binary outside the repo. Only the tests of moving from it
# (test/migration.test.ts) run it; it is never part of an install.
# Usage: build.sh SOURCE   Prints the path of the binary.
set -euo pipefail
source=${1:?usage: build.sh SOURCE, the folder of the original controller source}
[ -f "$source/go.mod" ] && [ -d "$source/cmd/controller" ] || {
  echo "original controller: $source holds no source of it (go.mod, cmd/controller)" >&2
  exit 1
}
cache=${HOSTFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow}/$(basename "$source")
if [ -x "$cache/controller" ]; then
  echo "$cache/controller"
  exit 0
fi
command -v go >/dev/null || { echo "original controller: Go is required to build it (not found on PATH)" >&2; exit 1; }
echo "building the original controller into $cache (one-off, 3-5 min on 2 cores)" >&2
# The source may be read-only: build in a copy.
rm -rf "$cache/src"
mkdir -p "$cache/src"
cp -R "$source/." "$cache/src/"
chmod -R u+w "$cache/src"
cd "$cache/src"
CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath -ldflags=-s -o "$cache/controller.tmp" ./cmd/controller
mv "$cache/controller.tmp" "$cache/controller"
rm -rf "$cache/src"
echo "$cache/controller"
