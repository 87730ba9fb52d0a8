#!/usr/bin/env bash
# Runs podman or buildah the way they work on a machine without Docker (a CI runner, a
# container): runc (crun fails on cgroups and rlimits there), the cgroupfs manager, no default
# ulimits, and the vfs storage driver in a storage of hostflow's own, beside its other caches, so
# that cleaning it touches nothing else on the machine:
#   bash deploy/image/containers.sh podman images
#   bash deploy/image/containers.sh buildah bud …
#   bash deploy/image/containers.sh clean      # removes the whole storage (base image included)
set -euo pipefail
store=${HOSTFLOW_CONTAINERS:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow/containers}
mkdir -p "$store"
if [ "${1:-}" = clean ]; then
  # vfs layers are plain directories; the run root holds only locks and container state.
  rm -rf "$store/storage" "$store/run"
  echo "removed $store/storage"
  exit 0
fi
cat >"$store/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$store/storage"
runroot = "$store/run"
EOF
cat >"$store/containers.conf" <<'EOF'
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
EOF
export CONTAINERS_STORAGE_CONF="$store/storage.conf" CONTAINERS_CONF="$store/containers.conf"
case "${1:-}" in
  podman)
    shift
    exec podman --runtime runc --storage-driver vfs --cgroup-manager cgroupfs "$@"
    ;;
  buildah)
    shift
    exec buildah --storage-driver vfs "$@"
    ;;
  *)
    echo "usage: $0 podman|buildah ARGS… | clean" >&2
    exit 2
    ;;
esac
