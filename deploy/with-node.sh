#!/usr/bin/env bash
# Runs a command on the project's Node: the Node 24 that deploy/bootstrap.sh installed into
# .tools/node when the machine's own is older, else the machine's. The npm scripts run the engine,
# the tests, lint, format and the benchmarks through it, so all of them run on the same Node.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -x "$root/.tools/node/node_modules/.bin/node" ]; then
  export PATH="$root/.tools/node/node_modules/.bin:$PATH"
fi
exec "$@"
