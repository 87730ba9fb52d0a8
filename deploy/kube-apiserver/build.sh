#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, etcd, kubectl, kubelet and kube-scheduler once from the Go module proxy
# and caches them outside the repo. The controller-manager is the same release as the API server:
# without it deleted namespaces stay Terminating, ownerReferences are never collected and no
# PodDisruptionBudget gets a status. kubectl is the same release as the API server, so the manifests' dry-run and
# `kubectl kustomize` never depend on whatever kubectl a machine happens to have.
# Usage: build.sh [cache-dir]   Prints the cache dir holding the binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '/k8s.io\/kubernetes v/ {print $2; exit}' "$here/go.mod")
cache=${1:-${HOSTFLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow}}/kube-$version
binaries=(etcd kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler pause)
have=1
for b in "${binaries[@]}"; do [ -x "$cache/$b" ] || have=0; done
if [ "$have" = 1 ]; then
  echo "$cache"
  exit 0
fi
command -v go >/dev/null || { echo "kube-apiserver: Go is required to build it (not found on PATH)" >&2; exit 1; }
mkdir -p "$cache"
cd "$here"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
# Stamp the real version: it is what /version and feature-gate emulation report.
minor=$(echo "$version" | cut -d. -f2)
stamp="-s -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
if [ ! -x "$cache/kube-apiserver" ] || [ ! -x "$cache/etcd" ]; then
  echo "building etcd and kube-apiserver $version into $cache (one-off, 10-20 min on 2 cores)" >&2
  go build -trimpath -ldflags=-s -o "$cache/etcd.tmp" ./etcd
  go build -trimpath -ldflags="$stamp" -o "$cache/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$cache/etcd.tmp" "$cache/etcd"
  mv "$cache/kube-apiserver.tmp" "$cache/kube-apiserver"
fi
if [ ! -x "$cache/kube-controller-manager" ]; then
  echo "building kube-controller-manager $version into $cache (one-off, 5-10 min on 2 cores)" >&2
  go build -trimpath -ldflags="$stamp" -o "$cache/kube-controller-manager.tmp" k8s.io/kubernetes/cmd/kube-controller-manager
  mv "$cache/kube-controller-manager.tmp" "$cache/kube-controller-manager"
fi
# The kubelet and the scheduler run the runner Jobs (local-stack/kubelet.ts), with Debian's
# containerd as their runtime.
for cmd in kubelet kube-scheduler; do
  if [ ! -x "$cache/$cmd" ]; then
    echo "building $cmd $version into $cache (one-off, 1-3 min on 2 cores)" >&2
    go build -trimpath -ldflags="$stamp" -o "$cache/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
    mv "$cache/$cmd.tmp" "$cache/$cmd"
  fi
done
if [ ! -x "$cache/pause" ]; then
  go build -trimpath -ldflags=-s -o "$cache/pause.tmp" ./pause
  mv "$cache/pause.tmp" "$cache/pause"
fi
if [ ! -x "$cache/kubectl" ]; then
  echo "building kubectl $version into $cache (one-off)" >&2
  go build -trimpath -ldflags="$stamp" -o "$cache/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl
  mv "$cache/kubectl.tmp" "$cache/kubectl"
fi
echo "$cache"
