#!/usr/bin/env bash
# Makes the pod Tekton would make for a TaskRun's first step, on `npm start`'s local node: owned by
# the TaskRun, labelled tekton.dev/taskRun, mounting multi-platform-ssh-<name> (optional: false) at
# /ssh, running the step's own script. Tekton's controller does not run on the local stack, and
# the step's image cannot be pulled here: the local build step image (curl and ssh,
# local-stack/build-pod-image) stands in for it. Made at once, as Tekton does, the pod waits for
# the Secret; then it prints the step's log.
# Usage: tekton-pod.sh NAMESPACE TASKRUN
set -euo pipefail
ns=${1:?usage: tekton-pod.sh NAMESPACE TASKRUN}
taskrun=${2:?usage: tekton-pod.sh NAMESPACE TASKRUN}
uid=$(kubectl -n "$ns" get taskrun "$taskrun" -o jsonpath='{.metadata.uid}')
script=$(kubectl -n "$ns" get taskrun "$taskrun" -o jsonpath='{.spec.taskSpec.steps[0].script}')
[ -n "$script" ] || { echo "TaskRun $ns/$taskrun has no inline step script" >&2; exit 1; }
image=$(kubectl get node hostflow-runner -o jsonpath='{.status.images[*].names[*]}' | tr ' ' '\n' |
  grep -m1 '^localhost/hostflow-build-step:') ||
  { echo "the local node has no build step image: is npm start running?" >&2; exit 1; }
pod=$taskrun-pod
kubectl create -f - <<MANIFEST
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  namespace: $ns
  labels: { tekton.dev/taskRun: $taskrun, app.kubernetes.io/managed-by: tekton-pipelines }
  ownerReferences:
    - { apiVersion: tekton.dev/v1, kind: TaskRun, name: $taskrun, uid: $uid, controller: true, blockOwnerDeletion: true }
spec:
  restartPolicy: Never
  nodeSelector: { hostflow.dev/runner: "true" }
  containers:
    - name: step-build
      image: $image
      imagePullPolicy: Never
      command: [bash, -c]
      args:
        - |
$(sed 's/^/          /' <<<"$script")
      volumeMounts: [{ name: ssh, mountPath: /ssh, readOnly: true }]
  volumes:
    - { name: ssh, secret: { secretName: multi-platform-ssh-$taskrun, optional: false } }
MANIFEST
echo "waiting for the pod to run (the kubelet mounts the Secret at its next try once it exists)…"
until phase=$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.phase}') &&
  [ "$phase" = Succeeded ] || [ "$phase" = Failed ]; do sleep 1; done
kubectl -n "$ns" logs "$pod"
echo "pod $ns/$pod: $phase"
