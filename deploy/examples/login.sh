#!/usr/bin/env bash
# Does what a build task does with its multi-platform-ssh Secret: redeems the one-time password
# for the private key with the exact curl command build tasks use, then logs in as the build user.
# Usage: login.sh NAMESPACE TASKRUN [COMMAND...]
set -euo pipefail
ns=${1:?usage: login.sh NAMESPACE TASKRUN [COMMAND...]}
taskrun=${2:?usage: login.sh NAMESPACE TASKRUN [COMMAND...]}
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
for key in otp otp-ca otp-server host user-dir error; do
  kubectl -n "$ns" get secret "multi-platform-ssh-$taskrun" -o jsonpath="{.data.$key}" | base64 -d >"$key" || true
done
if [ -s error ]; then echo "provisioning failed: $(cat error)" >&2; exit 1; fi
curl --fail --cacert otp-ca -XPOST -d @otp "$(cat otp-server)" > id_rsa
chmod 0400 id_rsa
exec ssh -i id_rsa -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
  "$(cat host)" "cd $(cat user-dir) && ${*:-echo \"logged in as \$(whoami) on \$(hostname), in \$(pwd)\"}"
