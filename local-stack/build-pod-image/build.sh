#!/usr/bin/env bash
# Builds the build step's image (local-stack/build-pod-image/Dockerfile) on hostflow's base and
# saves it as a docker archive for the local node's containerd:
#   bash local-stack/build-pod-image/build.sh
# Prints two lines: the image's name and the archive's path (deploy/image/build-on-base.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hostflow/build-pod-image
mkdir -p "$cache"
name=localhost/hostflow-build-step dockerfile=local-stack/build-pod-image/Dockerfile
context=local-stack/build-pod-image
# shellcheck source=deploy/image/build-on-base.sh
. deploy/image/build-on-base.sh
build_on_base
