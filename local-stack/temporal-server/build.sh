#!/usr/bin/env bash
# Builds the Temporal server once, from the Go module proxy, and caches it outside the repo with
# its SQL tool and the PostgreSQL schemas it ships: the production-shaped local Temporal
# (local-stack/temporal-server.ts) runs it on PostgreSQL, its four services as separate processes.
# v1.32.1 is the newest release whose go.mod asks for no newer Go than this machine's 1.26.8
# (v1.32.2 asks for 1.26.10), so the build needs no toolchain download.
# Usage: build.sh [cache-dir]   Prints the cache dir holding temporal-server, temporal-sql-tool
# and schema/.
set -euo pipefail
version=v1.32.1
cache=${1:-${HOSTFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow}}/temporal-server-$version
if [ -x "$cache/temporal-server" ] && [ -x "$cache/temporal-sql-tool" ] && [ -d "$cache/schema" ]; then
  echo "$cache"
  exit 0
fi
command -v go >/dev/null || { echo "temporal-server: Go is required to build it (not found on PATH)" >&2; exit 1; }
echo "building the Temporal server $version into $cache (one-off, 5-15 min on 2 cores)" >&2
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
go mod init temporal-download >/dev/null 2>&1
src=$(go mod download -json "go.temporal.io/server@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -n "$src" ] || { echo "temporal-server: could not download go.temporal.io/server $version" >&2; exit 1; }
cp -R "$src" src
chmod -R u+w src
cd src
mkdir -p "$cache"
go build -trimpath -ldflags="-s -w" -o "$cache/temporal-server.tmp" ./cmd/server
go build -trimpath -ldflags="-s -w" -o "$cache/temporal-sql-tool.tmp" ./cmd/tools/sql
rm -rf "$cache/schema"
mkdir -p "$cache/schema"
cp -R schema/postgresql "$cache/schema/postgresql"
mv "$cache/temporal-sql-tool.tmp" "$cache/temporal-sql-tool"
mv "$cache/temporal-server.tmp" "$cache/temporal-server"
echo "$cache"
