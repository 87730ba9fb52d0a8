#!/usr/bin/env bash
# Builds the runner image (deploy/runner-image/Dockerfile) with buildah, on the base that
# deploy/image/build.sh makes, with the kubespray checkouts given as NAME=DIR (each lands at
# /opt/kubespray/NAME, symlinks resolved), and saves it as a docker archive for containerd:
#   bash deploy/runner-image/build.sh kubespray-v2.31.0=../shared/kubespray-v2.31.0 …
# Prints two lines: the image's name and the archive's path (deploy/image/build-on-base.sh: built
# again only when the Dockerfile, the requirements, the checkouts' files or the base changed).
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { printf 'runner image: %s\n' "$*" >&2; }
die() {
  say "error: $*"
  exit 1
}
[ $# -gt 0 ] || die "usage: build.sh NAME=KUBESPRAY_DIR …"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hostflow/runner-image
mkdir -p "$cache"
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
name=localhost/hostflow-runner archive=runner dockerfile=deploy/runner-image/Dockerfile
# shellcheck source=deploy/image/build-on-base.sh
. deploy/image/build-on-base.sh
build_on_base
rm -rf "$context"
