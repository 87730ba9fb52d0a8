#!/bin/sh
# Plays the kubelet's part for demo Machines: registers a Ready Node with each Machine's
# spec.providerID, named after the Machine, as a kubelet joining would. Usage:
#   node-join.sh <namespace> <machine>...   those Machines
#   node-join.sh <namespace> --all          every Machine with a providerID and no Node yet
set -eu
[ $# -ge 2 ] || { echo "usage: $0 <namespace> <machine>... | $0 <namespace> --all" >&2; exit 2; }
ns=$1
shift
if [ "$1" = --all ]; then
  set -- $(kubectl -n "$ns" get machines -o jsonpath='{range .items[?(@.spec.providerID)]}{.metadata.name}{" "}{end}')
  [ $# -gt 0 ] || { echo "no Machine in $ns has a providerID yet: wait for Provisioned" >&2; exit 1; }
fi
for machine in "$@"; do
  provider=$(kubectl -n "$ns" get machine "$machine" -o jsonpath='{.spec.providerID}')
  [ -n "$provider" ] || { echo "Machine $ns/$machine has no spec.providerID yet: wait for Provisioned" >&2; exit 1; }
  kubectl get node "$machine" >/dev/null 2>&1 && continue
  kubectl create -f - <<NODE
apiVersion: v1
kind: Node
metadata: { name: $machine }
spec: { providerID: "$provider" }
NODE
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  # What a kubelet reports: Cluster API core's NodeHealthy waits for every one of these.
  cond() { printf '{"type":"%s","status":"%s","reason":"%s","message":"registered by node-join.sh","lastHeartbeatTime":"%s","lastTransitionTime":"%s"}' "$1" "$2" "$3" "$now" "$now"; }
  kubectl patch node "$machine" --subresource=status --type=merge -p "{\"status\":{\"conditions\":[$(cond Ready True KubeletReady),$(cond MemoryPressure False KubeletHasSufficientMemory),$(cond DiskPressure False KubeletHasNoDiskPressure),$(cond PIDPressure False KubeletHasSufficientPID)]}}"
done
