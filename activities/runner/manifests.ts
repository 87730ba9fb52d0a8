// One run's objects: the bundle Secret (everything the run gets, mounted read-only), the Job, and
// the NetworkPolicy that lets its pod reach its cluster's nodes on port 22 and nothing else. The
// Job owns the other two, so whatever deletes it takes them along.
import type { V1Job, V1NetworkPolicy, V1Secret } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { RunnerSettings } from '../../shared/runner-settings.js';

/** Where the runner image holds each kubespray checkout, by its folder's name. */
export const RUNNER_KUBESPRAY_DIR = '/opt/kubespray';
/** Where the bundle is mounted in the run's container. */
export const BUNDLE_DIR = '/run/hostflow';
export const CONTAINER = 'run';
export const RUN_LABEL = 'hostflow.dev/run';
export const CLUSTER_LABEL = 'hostflow.dev/cluster';
export const COMPONENT_LABELS = {
  'app.kubernetes.io/name': 'hostflow-runner',
  'app.kubernetes.io/managed-by': 'hostflow',
};

export interface RunRequest {
  /** The run's name (runName): its Job's, its Secret's and its policy's. */
  name: string;
  /** The cluster it runs for, `<namespace>/<name>`: never two runs for one at once. */
  cluster: string;
  /** What runs, as failures say it: `kubespray cluster.yml`. */
  what: string;
  command: string[];
  env: Record<string, string>;
  /** The bundle: path under BUNDLE_DIR → content; `mode` for files ssh insists on (the key). */
  files: Array<{ path: string; content: string; mode?: number }>;
  /** The nodes' addresses: the only places it may reach (port 22). */
  nodeAddresses: string[];
  deadlineSeconds: number;
}

/** A Job name from the run's identity (a retried activity finds its Job again): DNS-1123, 63 max. */
export function runName(identity: string): string {
  return `hostflow-run-${createHash('sha256').update(identity).digest('hex').slice(0, 20)}`;
}

/** A cluster as a label value: a digest, since `<namespace>/<name>` is not one. */
export function clusterLabel(cluster: string): string {
  return createHash('sha256').update(cluster).digest('hex').slice(0, 32);
}

const fileKey = (path: string) => path.replace(/[^-._a-zA-Z0-9]/g, '_');

export function bundleSecret(request: RunRequest, settings: RunnerSettings): V1Secret {
  return {
    metadata: { name: request.name, namespace: settings.namespace, labels: labels(request) },
    type: 'Opaque',
    stringData: Object.fromEntries(request.files.map((file) => [fileKey(file.path), file.content])),
  };
}

export function runJob(request: RunRequest, settings: RunnerSettings): V1Job {
  const { resources } = settings;
  return {
    metadata: {
      name: request.name,
      namespace: settings.namespace,
      labels: labels(request),
      annotations: { 'hostflow.dev/what': request.what.slice(0, 200) },
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: request.deadlineSeconds,
      // The engine deletes a run once it has read it; this is for a worker that never came back.
      ttlSecondsAfterFinished: 24 * 3600,
      template: {
        metadata: { labels: labels(request) },
        spec: {
          restartPolicy: 'Never',
          // ansible-playbook is the container's PID 1, which ignores SIGTERM: a cancelled run
          // (deleted operation, deadline) is killed 5 s after, not after the default 30 s while
          // it goes on changing hosts.
          terminationGracePeriodSeconds: 5,
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          // No cluster DNS is needed: the inventory names nodes by address.
          dnsPolicy: 'Default',
          ...(settings.nodeSelector ? { nodeSelector: settings.nodeSelector } : {}),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            runAsGroup: 1000,
            fsGroup: 1000,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: CONTAINER,
              image: settings.image,
              imagePullPolicy: 'IfNotPresent',
              command: request.command,
              env: Object.entries(request.env).map(([name, value]) => ({ name, value })),
              workingDir: '/tmp',
              resources: {
                requests: {
                  cpu: atMost(resources.cpuRequest, resources.cpuLimit),
                  memory: atMost(resources.memoryRequest, resources.memoryLimit),
                  'ephemeral-storage': atMost('64Mi', resources.ephemeralStorageLimit),
                },
                limits: {
                  cpu: resources.cpuLimit,
                  memory: resources.memoryLimit,
                  'ephemeral-storage': resources.ephemeralStorageLimit,
                },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [
                { name: 'bundle', mountPath: BUNDLE_DIR, readOnly: true },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            {
              name: 'bundle',
              secret: {
                secretName: request.name,
                defaultMode: 0o440,
                items: request.files.map((file) => ({
                  key: fileKey(file.path),
                  path: file.path,
                  ...(file.mode !== undefined ? { mode: file.mode } : {}),
                })),
              },
            },
            { name: 'tmp', emptyDir: { sizeLimit: resources.ephemeralStorageLimit } },
          ],
        },
      },
    },
  };
}

/** Egress to the nodes' sshd (and the configured mirrors) only; no ingress at all. */
export function runNetworkPolicy(request: RunRequest, settings: RunnerSettings): V1NetworkPolicy {
  return {
    metadata: { name: request.name, namespace: settings.namespace, labels: labels(request) },
    spec: {
      podSelector: { matchLabels: { [RUN_LABEL]: request.name } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [
        {
          to: request.nodeAddresses.map((address) => ({
            ipBlock: { cidr: `${address}/${isIP(address) === 6 ? 128 : 32}` },
          })),
          ports: [{ protocol: 'TCP', port: 22 }],
        },
        ...settings.mirrors.map((mirror) => ({
          to: [{ ipBlock: { cidr: mirror.cidr } }],
          ports: [{ protocol: 'TCP', port: mirror.port }],
        })),
      ],
    },
  };
}

/**
 * The request, or the limit where that is lower: the API server refuses a container whose request
 * is above its limit, so a limit set below the default request (HOSTFLOW_RUNNER_MEMORY_LIMIT=128Mi)
 * lowers the request with it.
 */
function atMost(request: string, limit: string): string {
  return amount(request) > amount(limit) ? limit : request;
}

const SUFFIXES: Record<string, number> = {
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** A quantity as runtime/settings.ts takes one (`500m`, `1`, `256Mi`); NaN for any other. */
function amount(quantity: string): number {
  const [, number, suffix = ''] = /^(\d+(?:\.\d+)?)([a-zA-Z]*)$/.exec(quantity) ?? [];
  return Number(number) * (SUFFIXES[suffix] ?? NaN);
}

function labels(request: RunRequest): Record<string, string> {
  return {
    ...COMPONENT_LABELS,
    [RUN_LABEL]: request.name,
    [CLUSTER_LABEL]: clusterLabel(request.cluster),
  };
}
