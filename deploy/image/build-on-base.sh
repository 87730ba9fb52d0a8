#!/usr/bin/env bash
# Builds an image on hostflow's base (deploy/image/build.sh --base) with buildah and saves it as a
# docker archive for containerd; sourced by the builds of the images the local node runs
# (deploy/runner-image/build.sh, local-stack/build-pod-image/build.sh), which set:
#   name        the image's repository, e.g. localhost/hostflow-runner
#   dockerfile  its Dockerfile (BASE_IMAGE is passed as a build argument)
#   context     the staged build context
#   cache       the folder kept for it: the archive and the build's trust files
#   archive     optional: the archive's name before its tag (default: the repository's last part)
# and then call `build_on_base`, which prints two lines: the image's name and the archive's path.
# The tag is a hash of the inputs (the Dockerfile, the base, every file of the context), so it is
# built again only when one of them changed; only the newest image and archive are kept.
build_on_base() {
  local what=${archive:-${name##*/}}
  local NODE_VERSION base inputs image tar t0
  containers() { bash deploy/image/containers.sh "$@"; }
  bash deploy/image/build.sh --base
  NODE_VERSION=$(sed -n 's/^NODE_VERSION=//p' deploy/bootstrap.sh)
  base=$(containers podman images --format '{{.Repository}}:{{.Tag}}' localhost/hostflow-base | grep -F "node$NODE_VERSION-" | head -1)
  if [ -z "$base" ]; then
    echo "$what: error: no hostflow base image (deploy/image/build.sh --base made none)" >&2
    return 1
  fi
  inputs=$(
    {
      sha256sum "$dockerfile"
      containers podman image inspect --format '{{.Id}}' "$base"
      (cd "$context" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
    } | sha256sum | cut -c1-16
  )
  image=$name:$inputs
  tar=$cache/$what-$inputs.tar
  if [ ! -f "$tar" ]; then
    if ! containers podman image exists "$image"; then
      echo "$what: building $image (first time on this machine: a few minutes)" >&2
      t0=$SECONDS
      # shellcheck source=deploy/image/build-trust.sh
      . deploy/image/build-trust.sh
      if ! containers buildah bud --isolation chroot --pull=never --layers=false "${trust[@]}" \
        -f "$dockerfile" --build-arg "BASE_IMAGE=$base" -t "$image" "$context" >&2; then
        echo "$what: error: buildah bud failed; its output is above" >&2
        return 1
      fi
      echo "$what: built $image in $((SECONDS - t0)) s" >&2
    fi
    rm -f "$tar.tmp"
    if ! containers buildah push --quiet "$image" "docker-archive:$tar.tmp:$image" >&2; then
      echo "$what: error: saving $image failed" >&2
      return 1
    fi
    mv "$tar.tmp" "$tar"
    # Only the current one is kept: older images and their archives go.
    find "$cache" -maxdepth 1 -name "$what-*.tar" ! -name "$what-$inputs.tar" -delete
    containers podman images --format '{{.Repository}}:{{.Tag}}' "$name" |
      { grep -vxF "$image" || true; } | while read -r old; do containers podman rmi "$old" >/dev/null 2>&1 || true; done
  fi
  echo "$image"
  echo "$tar"
}
