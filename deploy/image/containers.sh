#!/usr/bin/env bash
# Runs podman or buildah the way they work on a machine without Docker (a CI runner, a
# container): runc (crun fails on cgroups and rlimits there), the cgroupfs manager, no default
# ulimits, and a storage of hostflow's own (vfs unless HOSTFLOW_STORAGE_DRIVER says otherwise),
# beside its other caches, so that cleaning it touches nothing else on the machine:
#   bash deploy/image/containers.sh podman images
#   bash deploy/image/containers.sh buildah bud …
#   bash deploy/image/containers.sh clean      # removes the whole storage (base image included)
set -euo pipefail
store=${HOSTFLOW_CONTAINERS:-${XDG_CACHE_HOME:-$HOME/.cache}/hostflow/containers}
# vfs works everywhere but copies every layer in full: a container of the 1.1 GB image takes
# about 20 s to create. Where the kernel allows overlay mounts (it did on this kind of machine:
# 0.4 s), HOSTFLOW_STORAGE_DRIVER=overlay; each driver has a storage of its own.
driver=${HOSTFLOW_STORAGE_DRIVER:-vfs}
suffix=$([ "$driver" = vfs ] || echo "-$driver")
mkdir -p "$store"
if [ "${1:-}" = clean ]; then
  # Layers are plain directories; the run roots hold only locks and container state.
  rm -rf "$store"/storage "$store"/storage-* "$store"/run "$store"/run-*
  echo "removed the container storage in $store"
  exit 0
fi
# Written only when they differ, and then whole (a rename): several podman runs start at once,
# and one that read a half-written file would fall back to the defaults this file is here to avoid.
write_conf() {
  local file=$1 content=$2 tmp
  [ "$(cat "$file" 2>/dev/null)" != "$content" ] || return 0
  tmp=$(mktemp "$file.XXXXXX")
  printf '%s\n' "$content" >"$tmp"
  mv -f "$tmp" "$file"
}
write_conf "$store/storage$suffix.conf" "[storage]
driver = \"$driver\"
graphroot = \"$store/storage$suffix\"
runroot = \"$store/run$suffix\""
write_conf "$store/containers.conf" '[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"'
export CONTAINERS_STORAGE_CONF="$store/storage$suffix.conf" CONTAINERS_CONF="$store/containers.conf"
case "${1:-}" in
  podman)
    shift
    exec podman --runtime runc --storage-driver "$driver" --cgroup-manager cgroupfs "$@"
    ;;
  buildah)
    shift
    exec buildah --storage-driver "$driver" "$@"
    ;;
  *)
    echo "usage: $0 podman|buildah ARGS… | clean" >&2
    exit 2
    ;;
esac
