#!/usr/bin/env bash
# Builds the CNCF Distribution registry once from the Go module proxy (pinned in go.mod/go.sum)
# and caches it outside the repo. Usage: build.sh [cache-dir]   Prints the binary's path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '/github.com\/distribution\/distribution\/v3 v/ {print $2; exit}' "$here/go.mod")
cache=${1:-${HOSTFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow}}/registry-$version
if [ -x "$cache/registry" ]; then echo "$cache/registry"; exit 0; fi
command -v go >/dev/null || { echo "registry: Go is required to build it (not found on PATH)" >&2; exit 1; }
mkdir -p "$cache"
cd "$here"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
echo "building the registry $version into $cache (one-off, a few minutes on 2 cores)" >&2
go build -trimpath -ldflags=-s -o "$cache/registry.tmp" github.com/distribution/distribution/v3/cmd/registry
mv "$cache/registry.tmp" "$cache/registry"
echo "$cache/registry"
