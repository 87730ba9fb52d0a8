#!/usr/bin/env bash
# Builds Cluster API core's manager once, from the Go module proxy, and caches it outside the repo
# with what installing it needs: CAPI's own CRDs and its webhook configurations, as the release
# ships them. The local stack runs it as the real neighbour of hostflow's Machine family
# (local-stack/capi-core.ts). The module's go.mod replaces sigs.k8s.io/cluster-api/api with ./api,
# which its zip leaves out: the api module is downloaded beside it and put there.
# Usage: build.sh [cache-dir]   Prints the cache dir holding manager, crds/ and webhooks.yaml.
set -euo pipefail
version=v1.14.2
cache=${1:-${HOSTFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow}}/capi-$version
if [ -x "$cache/manager" ] && [ -f "$cache/webhooks.yaml" ] && [ -d "$cache/crds" ]; then
  echo "$cache"
  exit 0
fi
command -v go >/dev/null || { echo "capi-core: Go is required to build it (not found on PATH)" >&2; exit 1; }
echo "building Cluster API core $version into $cache (one-off, 5-10 min on 2 cores)" >&2
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
go mod init capi-download >/dev/null 2>&1
dir_of() { go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'; }
core=$(dir_of "sigs.k8s.io/cluster-api@$version")
api=$(dir_of "sigs.k8s.io/cluster-api/api@$version")
[ -n "$core" ] && [ -n "$api" ] || { echo "capi-core: could not download sigs.k8s.io/cluster-api $version" >&2; exit 1; }
cp -R "$core" src
cp -R "$api" src/api
chmod -R u+w src
cd src
mkdir -p "$cache"
v=sigs.k8s.io/cluster-api/version
minor=$(echo "$version" | cut -d. -f2)
go build -trimpath \
  -ldflags="-s -w -X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
  -o "$cache/manager.tmp" ./core
rm -rf "$cache/crds"
cp -R core/config/crd/bases "$cache/crds"
cp core/config/webhook/manifests.yaml "$cache/webhooks.yaml"
mv "$cache/manager.tmp" "$cache/manager"
echo "$cache"
