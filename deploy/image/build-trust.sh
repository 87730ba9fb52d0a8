# Sourced by the image builds (deploy/image/build.sh, deploy/image/build-on-base.sh), with $cache set:
# sets `trust`, the buildah volumes that hand the machine's CA bundle to the RUN steps.
# The machine's CA bundle, for the RUN steps only (never in the image): where HTTPS goes through
# a proxy that re-signs it, npm and pip in the build trust what the machine trusts. Beside, not
# over, /etc/ssl/certs/ca-certificates.crt: the ca-certificates package the build installs
# rewrites that file.
ca=${HOSTFLOW_BUILD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
trust=()
if [ -f "$ca" ]; then
  mkdir -p "$cache/build-trust"
  cp "$ca" "$cache/build-trust/ca.crt"
  echo 'cafile=/run/build-trust/ca.crt' >"$cache/build-trust/npmrc"
  printf '[global]\ncert = /run/build-trust/ca.crt\n' >"$cache/build-trust/pip.conf"
  trust=(--volume "$cache/build-trust:/run/build-trust:ro"
    --volume "$cache/build-trust/npmrc:/usr/local/etc/npmrc:ro"
    --volume "$cache/build-trust/pip.conf:/etc/pip.conf:ro")
fi
