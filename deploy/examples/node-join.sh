#!/bin/sh
# Plays the kubelet's part for a demo Machine: registers a Ready Node with the Machine's
# spec.providerID, named after the Machine. Usage: node-join.sh <namespace> <machine>
set -eu
[ $# -eq 2 ] || { echo "usage: $0 <namespace> <machine>" >&2; exit 2; }
ns=$1 machine=$2
provider=$(kubectl -n "$ns" get machine "$machine" -o jsonpath='{.spec.providerID}')
[ -n "$provider" ] || { echo "Machine $ns/$machine has no spec.providerID yet: wait for Provisioned" >&2; exit 1; }
kubectl create -f - <<NODE
apiVersion: v1
kind: Node
metadata: { name: $machine }
spec: { providerID: "$provider" }
NODE
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kubectl patch node "$machine" --subresource=status --type=merge -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"registered by node-join.sh\",\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}"
