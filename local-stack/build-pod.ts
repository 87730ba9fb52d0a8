// A TaskRun's pod as Tekton makes it for the Konflux remote build task: owned by the TaskRun,
// labelled with its name, mounting the `multi-platform-ssh-<name>` Secret (`optional: false`) at
// /ssh, its step running the task's own redemption and login. Tekton's controller cannot run
// here, so the tests and benchmarks make the pod Tekton would; the kubelet that runs it is real.
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { RUNNER_NODE_LABEL } from './kubelet.js';
import { waitFor } from './process.js';
import { secretNameFor, TEKTON_TASKRUN_LABEL } from '../platform-config/contract.js';
import type { TaskRunRef } from '../shared/contracts/taskrun.js';

/**
 * The Konflux buildah-remote task's step, as far as reaching the host: the error Secret ends the
 * build, else the OTP is redeemed for the key, and the build logs in at `host` to make its
 * folders. `remote` is what it then runs there (the real task copies the sources and builds).
 */
export function remoteBuildScript(remote: string): string {
  return `set -e
mkdir -p ~/.ssh
if [ -e "/ssh/error" ]; then
  #no server could be provisioned
  cat /ssh/error
  exit 1
elif [ -e "/ssh/otp" ]; then
  curl --cacert /ssh/otp-ca -XPOST -d @/ssh/otp $(cat /ssh/otp-server) >~/.ssh/id_rsa
  echo "" >> ~/.ssh/id_rsa
else
  cp /ssh/id_rsa ~/.ssh
fi
chmod 0400 ~/.ssh/id_rsa
export SSH_HOST=$(cat /ssh/host)
export BUILD_DIR=$(cat /ssh/user-dir)
export SSH_ARGS="-o StrictHostKeyChecking=no -o ServerAliveInterval=60 -o ServerAliveCountMax=10"
ssh $SSH_ARGS "$SSH_HOST" mkdir -p "$BUILD_DIR/workspaces" "$BUILD_DIR/scripts" "$BUILD_DIR/volumes"
ssh $SSH_ARGS "$SSH_HOST" ${JSON.stringify(remote)}
`;
}

export interface BuildPodOptions {
  image: string;
  /** What the step runs (default: the remote build task's redemption and login). */
  script?: string;
  /** false: a pod the TaskRun does not own (no ownerReference), e.g. made by hand. */
  owned?: boolean;
}

/** The pod Tekton makes for `taskRun`'s one step. */
export function buildPod(taskRun: TaskRunRef, options: BuildPodOptions): V1Pod {
  return {
    metadata: {
      name: `${taskRun.name}-pod`,
      namespace: taskRun.namespace,
      labels: {
        [TEKTON_TASKRUN_LABEL]: taskRun.name,
        'app.kubernetes.io/managed-by': 'tekton-pipelines',
      },
      ...(options.owned === false
        ? {}
        : {
            ownerReferences: [
              {
                apiVersion: 'tekton.dev/v1',
                kind: 'TaskRun',
                name: taskRun.name,
                uid: taskRun.uid,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          }),
    },
    spec: {
      restartPolicy: 'Never',
      // Where a cluster's pod template or scheduler would place it: here, the one real node
      // (the stand-in Nodes of other tests run nothing).
      nodeSelector: { [RUNNER_NODE_LABEL]: 'true' },
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'step-build',
          image: options.image,
          imagePullPolicy: 'Never',
          command: ['bash', '-c', options.script ?? remoteBuildScript('whoami; uname -m')],
          volumeMounts: [{ name: 'ssh', mountPath: '/ssh', readOnly: true }],
          resources: { limits: { cpu: '500m', memory: '128Mi' } },
        },
      ],
      volumes: [
        { name: 'ssh', secret: { secretName: secretNameFor(taskRun.name), optional: false } },
      ],
    },
  };
}

/** Waits until the pod has ended; returns its phase and its step's log. */
export async function podOutcome(
  core: CoreV1Api,
  namespace: string,
  name: string,
  timeoutMs = 120_000,
): Promise<{ phase: string; log: string; pod: V1Pod }> {
  const pod = await waitFor(
    `pod ${namespace}/${name} to end`,
    async () => {
      const read = await core.readNamespacedPod({ name, namespace });
      return ['Succeeded', 'Failed'].includes(read.status?.phase ?? '') ? read : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
  const log = await core.readNamespacedPodLog({ name, namespace, container: 'step-build' });
  return { phase: pod.status!.phase!, log, pod };
}
