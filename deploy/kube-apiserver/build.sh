#!/usr/bin/env bash
# Builds kube-apiserver and etcd once from the Go module proxy and caches them outside the repo.
# Usage: build.sh [cache-dir]   Prints the cache dir holding both binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '/k8s.io\/kubernetes v/ {print $2; exit}' "$here/go.mod")
cache=${1:-${HOSTFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow}}/kube-$version
if [ -x "$cache/kube-apiserver" ] && [ -x "$cache/etcd" ]; then echo "$cache"; exit 0; fi
command -v go >/dev/null || { echo "kube-apiserver: Go is required to build it (not found on PATH)" >&2; exit 1; }
mkdir -p "$cache"
cd "$here"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
echo "building etcd and kube-apiserver $version into $cache (one-off, 10-20 min on 2 cores)" >&2
go build -trimpath -ldflags=-s -o "$cache/etcd.tmp" ./etcd
# Stamp the real version: it is what /version and feature-gate emulation report.
minor=$(echo "$version" | cut -d. -f2)
stamp="-s -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
go build -trimpath -ldflags="$stamp" -o "$cache/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$cache/etcd.tmp" "$cache/etcd"
mv "$cache/kube-apiserver.tmp" "$cache/kube-apiserver"
echo "$cache"
