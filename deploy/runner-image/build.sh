#!/usr/bin/env bash
# Builds the runner image (deploy/runner-image/Dockerfile) with buildah, on the base that
# deploy/image/build.sh makes, with the kubespray checkouts given as NAME=DIR (each lands at
# /opt/kubespray/NAME, symlinks resolved), and saves it as a docker archive for containerd:
#   bash deploy/runner-image/build.sh kubespray-v2.31.0=../shared/kubespray-v2.31.0 …
# Prints two lines: the image's name and the archive's path. Built again only when its inputs
# changed (the Dockerfile, the requirements, the checkouts' files, the base); the cache keeps the
# last archive only.
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { printf 'runner image: %s\n' "$*" >&2; }
die() {
  say "error: $*"
  exit 1
}
containers() { bash deploy/image/containers.sh "$@"; }
[ $# -gt 0 ] || die "usage: build.sh NAME=KUBESPRAY_DIR …"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hostflow/runner-image
mkdir -p "$cache"
bash deploy/image/build.sh --base
NODE_VERSION=$(sed -n 's/^NODE_VERSION=//p' deploy/bootstrap.sh)
base=$(containers podman images --format '{{.Repository}}:{{.Tag}}' localhost/hostflow-base | grep -F "node$NODE_VERSION-" | head -1)
[ -n "$base" ] || die "no hostflow base image (deploy/image/build.sh --base made none)"

# The build context, staged whole: the checkouts with their links resolved.
context=$cache/context
rm -rf "$context"
mkdir -p "$context/kubespray"
cp deploy/requirements-kubespray.txt "$context/"
for entry in "$@"; do
  name=${entry%%=*} dir=${entry#*=}
  [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]] || die "bad checkout name '$name' (letters, digits, . _ -)"
  [ -d "$dir" ] || die "no kubespray checkout at $dir"
  cp -rL "$dir" "$context/kubespray/$name"
  rm -rf "$context/kubespray/$name/.git"
done
inputs=$(
  {
    sha256sum deploy/runner-image/Dockerfile
    containers podman image inspect --format '{{.Id}}' "$base"
    (cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-16
)
image=localhost/hostflow-runner:$inputs
tar=$cache/runner-$inputs.tar
if [ ! -f "$tar" ]; then
  if ! containers podman image exists "$image"; then
    say "building $image (first time on this machine: a few minutes)"
    t0=$SECONDS
    # shellcheck source=deploy/image/build-trust.sh
    . deploy/image/build-trust.sh
    containers buildah bud --isolation chroot --pull=never --layers=false "${trust[@]}" \
      -f deploy/runner-image/Dockerfile --build-arg "BASE_IMAGE=$base" -t "$image" "$context" >&2 ||
      die "buildah bud failed; its output is above"
    say "built $image in $((SECONDS - t0)) s"
  fi
  rm -f "$tar.tmp"
  containers buildah push --quiet "$image" "docker-archive:$tar.tmp:$image" >&2 || die "saving $image failed"
  mv "$tar.tmp" "$tar"
  # Only the current one is kept: older runner images and their archives go.
  find "$cache" -maxdepth 1 -name 'runner-*.tar' ! -name "runner-$inputs.tar" -delete
  containers podman images --format '{{.Repository}}:{{.Tag}}' localhost/hostflow-runner |
    { grep -vxF "$image" || true; } | while read -r old; do containers podman rmi "$old" >/dev/null 2>&1 || true; done
fi
rm -rf "$context"
echo "$image"
echo "$tar"
