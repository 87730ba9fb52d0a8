// ClusterOperations in the tests: a Provisioning installed on the test's BareMetalHosts, and what a
// test does with operations on it (create one, read its status, wait for its end, read each
// node's version marker, break or slow a node through the stand-in's fault files).
import { waitFor } from '../../local-stack/process.js';
import { PROVISIONING_API, type ProvisioningSpec } from '../../shared/bpa-api.js';
import {
  CLUSTER_OPERATION_API,
  type ClusterOperationSpec,
} from '../../shared/cluster-operation-api.js';
import { registerBareMetalHosts, type BareMetalHosts } from './baremetal.js';
import { startBridge, startWorker, type EngineProcess } from './engine.js';
import { kubesprayWorkerEnv } from './kubespray.js';
import { runnerPods } from './runner-jobs.js';
import { createScope, type TestScope } from './scope.js';

export interface OperationStatus {
  phase?: string;
  currentStep?: string;
  message?: string;
  queuePosition?: number;
  notBefore?: string;
  retry?: string;
  startTime?: string;
  completionTime?: string;
  failedStep?: string;
  failedHost?: string;
  failedTask?: string;
  log?: string;
  steps?: Array<{
    name: string;
    action: string;
    phase: string;
    log?: string;
    message?: string;
    hosts?: Record<string, { ok: number; changed: number }>;
    wouldChange?: Record<string, number>;
    hostsNotShown?: number;
  }>;
}

export interface ProvisioningStatus {
  phase?: string;
  kubeVersion?: string;
  lastOperation?: Record<string, string>;
}

/** What a test file of ClusterOperations runs them on. */
export interface OperationStack {
  scope: TestScope;
  metal: BareMetalHosts;
  worker: EngineProcess;
  bridge: EngineProcess;
}

/** A worker's environment: the kubespray stand-in over the test's BareMetalHosts. */
export const operationWorkerEnv = (sfx: string, metal: BareMetalHosts): NodeJS.ProcessEnv => ({
  ...kubesprayWorkerEnv(sfx),
  HOSTFLOW_BAREMETAL_NAMESPACES: metal.namespace,
});

/**
 * A scope named `prefix` with `count` BareMetalHosts, a worker that runs the kubespray stand-in
 * over them and a bridge: the stack each ClusterOperation test file shares.
 */
export async function startOperationStack(
  prefix: string,
  count: number,
  sfx: string,
): Promise<OperationStack> {
  const scope = await createScope(prefix);
  const metal = await registerBareMetalHosts(scope, { count, sfx });
  const worker = await startWorker(scope, operationWorkerEnv(sfx, metal));
  return { scope, metal, worker, bridge: await startBridge(scope) };
}

/** Creates Provisioning `name` for `cluster` (its `cluster` label) in the test's namespace. */
export async function createProvisioning(
  scope: TestScope,
  name: string,
  cluster: string,
  spec: ProvisioningSpec,
  labels: Record<string, string> = {},
): Promise<void> {
  await scope.kube.custom.createNamespacedCustomObject({
    ...PROVISIONING_API,
    namespace: scope.namespace,
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      metadata: { name, labels: { ...labels, cluster } },
      spec,
    },
  });
}

/** Creates Provisioning `name` (master on host 0, the given workers) and waits until it is Ready. */
export async function installCluster(
  scope: TestScope,
  metal: BareMetalHosts,
  options: { name: string; cluster: string; workers: number[]; spec?: ProvisioningSpec },
): Promise<void> {
  const label = (i: number) => (i === 1 ? 'worker' : `worker${i}`);
  await createProvisioning(scope, options.name, options.cluster, {
    masters: [{ master: { 'mac-address': metal.macs[0]! } }],
    workers: options.workers.map((i) => ({ [label(i)]: { 'mac-address': metal.macs[i]! } })),
    ...options.spec,
  });
  const ops = clusterOperations(scope, metal, options);
  await waitFor(
    'the cluster to be installed',
    async () => ((await ops.provisioning())?.phase === 'Ready' ? true : undefined),
    { timeoutMs: 120_000 },
  );
}

/** Operations on Provisioning `name` (cluster `cluster`) in the test's namespace. */
export function clusterOperations(
  scope: TestScope,
  metal: BareMetalHosts,
  { name: provisioningName, cluster }: { name: string; cluster: string },
) {
  const { namespace } = scope;
  const provisioning = async () =>
    (
      (await scope.kube.custom.getNamespacedCustomObject({
        ...PROVISIONING_API,
        namespace,
        name: provisioningName,
      })) as { status?: ProvisioningStatus }
    ).status;

  async function operate(name: string, spec: Omit<ClusterOperationSpec, 'provisioning'>) {
    await scope.kube.custom.createNamespacedCustomObject({
      ...CLUSTER_OPERATION_API,
      namespace,
      body: {
        apiVersion: 'hostflow.dev/v1alpha1',
        kind: 'ClusterOperation',
        metadata: { name },
        spec: { provisioning: provisioningName, ...spec },
      },
    });
  }

  const status = async (name: string): Promise<OperationStatus> =>
    (
      (await scope.kube.custom.getNamespacedCustomObject({
        ...CLUSTER_OPERATION_API,
        namespace,
        name,
      })) as { status?: OperationStatus }
    ).status ?? {};

  /** The operation's status once it has ended. */
  const ended = (name: string, timeoutMs = 120_000) =>
    waitFor(
      `ClusterOperation ${name} to end`,
      async () => {
        const found = await status(name);
        return ['Succeeded', 'Failed', 'Cancelled'].includes(found.phase ?? '') ? found : undefined;
      },
      { timeoutMs, intervalMs: 200 },
    );

  /** Each node's version marker, as upgrade-cluster.yml left it ('' when none). */
  const versions = () =>
    Promise.all(
      metal.pool.hosts.map(async (host) =>
        (
          await host.exec(['sh', '-c', 'cat /var/tmp/hostflow-stand-in-kube-version || true'])
        ).stdout.trim(),
      ),
    );

  /** The Provisioning's status once it notes `name` as its last operation. */
  const noted = (name: string) =>
    waitFor(`the Provisioning to note ${name}`, async () => {
      const found = await provisioning();
      return found?.lastOperation?.name === name ? found : undefined;
    });

  /** The operation's Event of `reason`, once there is one. */
  const eventOf = (name: string, reason: string, timeoutMs = 30_000) =>
    waitFor(
      `a ${reason} Event on ${name}`,
      async () => {
        const events = await scope.kube.core.listNamespacedEvent({ namespace });
        return events.items.find((e) => e.involvedObject.name === name && e.reason === reason);
      },
      { timeoutMs },
    );

  /** Whether a run of ansible goes for the cluster: a pod of its runner Jobs is running. */
  const playbookRuns = async () =>
    (await runnerPods(`${namespace}/${cluster}`)).some((pod) => pod.status?.phase === 'Running');

  /** The cluster's runner pods still there, whatever their phase (a stopping one included). */
  const runnerPodsLeft = async () =>
    (await runnerPods(`${namespace}/${cluster}`)).map(
      (pod) => `${pod.metadata?.name} ${pod.status?.phase}`,
    );

  /** Waits until the operation's action runs and its runner pod has started. */
  async function actionRunning(name: string): Promise<void> {
    await waitFor(`${name}'s action to run`, async () => {
      const found = await status(name);
      return found.phase === 'Running' && found.currentStep === 'action' && (await playbookRuns())
        ? true
        : undefined;
    });
  }

  const onNode = (index: number, command: string) =>
    metal.pool.hosts[index]!.exec(['sh', '-c', command]);

  /** Breaks (its text is the failure) or slows (seconds) node `index`, or, with no value, mends it. */
  const setFault = (index: number, fault: 'slow' | 'broken', value?: string) =>
    onNode(
      index,
      value === undefined
        ? `rm -f /var/tmp/hostflow-stand-in-${fault}`
        : `echo "${value}" > /var/tmp/hostflow-stand-in-${fault}`,
    );

  /** Runs `body` with node `index` slowed or broken, and mends it after. */
  async function withFault(
    index: number,
    fault: 'slow' | 'broken',
    value: string,
    body: () => Promise<void>,
  ): Promise<void> {
    await setFault(index, fault, value);
    try {
      await body();
    } finally {
      await setFault(index, fault);
    }
  }

  return {
    provisioning,
    operate,
    status,
    ended,
    versions,
    noted,
    eventOf,
    playbookRuns,
    runnerPodsLeft,
    actionRunning,
    onNode,
    setFault,
    withFault,
  };
}
