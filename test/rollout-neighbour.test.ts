// The rollout family as a good neighbour (docs/rollouts.md): it serves only the MachineConfigPools
// labelled for its engine, lets go of one whose label goes, and serves none where the Machine
// Config Operator runs, saying so once in its log and in its readiness. On a second, real
// cluster (its own etcd, kube-apiserver and controller-manager) with the MCO's CRDs (the local
// stack's stand-ins: the MCO itself cannot run here) and its own Temporal namespace, the bridge
// runs as deploy/overlays/example's account, with exactly its RBAC, and so does a worker of the
// rollouts family. What the bridge sends each pool's workflow is read from the workflow's
// history; what the worker says on a pool, from the pool.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { join } from 'node:path';
import { installCrd } from '../local-stack/cluster-setup.js';
import { startEngineProcess, type EngineProcess } from '../local-stack/engine.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { freePort } from '../local-stack/ports.js';
import { waitFor } from '../local-stack/process.js';
import { registerNamespace } from '../local-stack/temporal.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import {
  MACHINE_CONFIG_POOL_API,
  MCO_SIGNS,
  POOL_ENGINE_LABEL,
  POOL_NOT_SERVED,
} from '../shared/mco-api.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import type { PoolObservation } from '../shared/contracts/rollout.js';
import { tearDown } from './support/engine.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { overlayAccounts, startOtherCluster, type OtherCluster } from './support/other-cluster.js';

const suffix = uniqueSuffix();
const engineNamespace = `neighbour-engine-${suffix}`;
const temporalNamespace = `hostflow-neighbour-${suffix}`;
const NOT_SERVING = 'rollouts: serving no MachineConfigPool: the MCO runs here';

let other: OtherCluster;
let kc: KubeConfig;
let bridge: EngineProcess;
let worker: EngineProcess;
let health: string;
let connection: Connection;
let temporal: Client;

beforeAll(async () => {
  other = await startOtherCluster('neighbour-cluster');
  kc = other.kc;
  for (const crd of ['mco-machineconfigpool.yaml', 'mco-machineconfig.yaml']) {
    await installCrd(kc, join(REPO_ROOT, 'local-stack/upstream-crds', crd));
  }
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: engineNamespace } } });
  await registerNamespace(testEnv('temporalAddress'), temporalNamespace);
  connection = await Connection.connect({ address: testEnv('temporalAddress') });
  temporal = new Client({ connection, namespace: temporalNamespace });
  const accountOf = await overlayAccounts(other, 'deploy/overlays/example', engineNamespace);
  const address = `127.0.0.1:${await freePort()}`;
  health = `http://${address}`;
  const settings = {
    TEMPORAL_ADDRESS: testEnv('temporalAddress'),
    TEMPORAL_NAMESPACE: temporalNamespace,
    HOSTFLOW_NAMESPACE: engineNamespace,
    HOSTFLOW_TASK_QUEUE: `hostflow-neighbour-${suffix}`,
    HOSTFLOW_FAMILIES: 'rollouts',
  };
  [bridge, worker] = await Promise.all([
    startEngineProcess(
      'bridge',
      {
        ...settings,
        KUBECONFIG: await accountOf('bridge'),
        HOSTFLOW_RESYNC_SECONDS: '5',
        HOSTFLOW_HEALTH_ADDRESS: address,
      },
      { name: 'bridge-neighbour', logFile: join(other.logDir, 'bridge.log') },
    ),
    startEngineProcess(
      'worker',
      {
        ...settings,
        KUBECONFIG: await accountOf('worker'),
        HOSTFLOW_WORKFLOW_BUNDLE: testEnv('workflowBundle'),
      },
      { name: 'worker-neighbour', logFile: join(other.logDir, 'worker.log') },
    ),
  ]);
}, 180_000);

afterAll(async () => {
  await tearDown([bridge, worker]);
  await connection?.close();
  await other?.server.stop();
});

const custom = () => kc.makeApiClient(CustomObjectsApi);

async function createPool(name: string, engine?: string): Promise<void> {
  await custom().createClusterCustomObject({
    ...MACHINE_CONFIG_POOL_API,
    body: {
      apiVersion: `${MACHINE_CONFIG_POOL_API.group}/${MACHINE_CONFIG_POOL_API.version}`,
      kind: 'MachineConfigPool',
      metadata: { name, ...(engine ? { labels: { [POOL_ENGINE_LABEL]: engine } } : {}) },
      spec: { nodeSelector: { matchLabels: { [`node-role.kubernetes.io/${name}`]: '' } } },
    },
  });
}

/** What the bridge told a pool's workflow, in order; undefined when it has no workflow. */
async function toldPool(pool: string): Promise<PoolObservation[] | undefined> {
  try {
    const { events } = await temporal.workflow.getHandle(WORKFLOW_ID.rollout(pool)).fetchHistory();
    return (events ?? []).flatMap((event) => {
      const payload = event.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0];
      return payload?.data
        ? [JSON.parse(Buffer.from(payload.data).toString()) as PoolObservation]
        : [];
    });
  } catch (err) {
    // Fetching a history answers gRPC's NOT_FOUND (5), not the client's WorkflowNotFoundError.
    if ((err as { code?: number }).code === 5) return undefined;
    throw err;
  }
}

/** A condition the MCO would have written on a pool. */
const MCO_UPDATED = {
  type: 'Updated',
  status: 'True',
  reason: 'AllNodesUpdated',
  message: 'written by the MCO',
};

/** A pool's status conditions. */
async function conditionsOf(pool: string) {
  const read = (await custom().getClusterCustomObject({
    ...MACHINE_CONFIG_POOL_API,
    name: pool,
  })) as { status?: { conditions?: Array<Record<string, string>> } };
  return read.status?.conditions ?? [];
}

/** The readiness answer's status and body. */
async function readiness(): Promise<{ status: number; body: string }> {
  const answer = await fetch(`${health}/readyz`);
  return { status: answer.status, body: await answer.text() };
}

/** Waits out two relists of the pools (HOSTFLOW_RESYNC_SECONDS=5), so a pool not served is one that would have been. */
const twoRelists = () => new Promise((resolve) => setTimeout(resolve, 11_000));

describe('the rollout family beside others on a cluster', () => {
  it('serves only the pools labelled for its engine', async () => {
    await createPool('opted-in', engineNamespace);
    await createPool('unlabelled');
    await createPool('another-engine', 'another-engine');
    const told = await waitFor('the opted-in pool to be served', () => toldPool('opted-in'));
    expect(told[0]).toMatchObject({ deleted: false });
    await twoRelists();
    expect(await toldPool('unlabelled')).toBeUndefined();
    expect(await toldPool('another-engine')).toBeUndefined();
    expect(await readiness()).toEqual({ status: 200, body: 'ok\n' });
  }, 60_000);

  it('lets go of a pool whose label is taken off, as of a deleted one', async () => {
    await createPool('left', engineNamespace);
    await waitFor('the pool to be served', () => toldPool('left'));
    await custom().patchClusterCustomObject(
      {
        ...MACHINE_CONFIG_POOL_API,
        name: 'left',
        body: { metadata: { labels: { [POOL_ENGINE_LABEL]: null } } },
      },
      MERGE_PATCH,
    );
    const told = await waitFor('the pool to be let go', async () => {
      const all = await toldPool('left');
      return all?.at(-1)?.deleted ? all : undefined;
    });
    // Served at every relist until then; let go once, and told nothing after.
    expect(told.slice(0, -1).every((seen) => !seen.deleted)).toBe(true);
    await twoRelists();
    expect(await toldPool('left')).toHaveLength(told.length);
  }, 60_000);

  it('serves no pool where the MCO runs, saying so once, and serves again once it is gone', async () => {
    const { namespace, name } = MCO_SIGNS.daemonSet;
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const apps = kc.makeApiClient(AppsV1Api);
    const labels = { app: name };
    await apps.createNamespacedDaemonSet({
      namespace,
      body: {
        metadata: { name },
        spec: {
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            // This cluster has no node: the DaemonSet is only the MCO's sign.
            spec: { containers: [{ name: 'daemon', image: 'machine-config-daemon' }] },
          },
        },
      },
    });
    const said = `${NOT_SERVING} (its DaemonSet ${namespace}/${name} is there)`;
    const answer = await waitFor('readiness to say why', async () => {
      const found = await readiness();
      return found.body.includes(NOT_SERVING) ? found : undefined;
    });
    expect(answer).toEqual({ status: 200, body: `ok\n${said}\n` });
    // The pool it served is let go; a pool labelled for it now is not served.
    const told = await waitFor('the opted-in pool to be let go', async () => {
      const all = await toldPool('opted-in');
      return all?.at(-1)?.deleted ? all : undefined;
    });
    expect(told.at(-1)).toMatchObject({ deleted: true });
    // Each pool labelled for this engine says why, in a condition of hostflow's own beside the
    // MCO's (here, one written as the MCO would, before the label); a pool not labelled for it
    // is not touched.
    await createPool('late');
    await custom().patchClusterCustomObjectStatus(
      { ...MACHINE_CONFIG_POOL_API, name: 'late', body: { status: { conditions: [MCO_UPDATED] } } },
      MERGE_PATCH,
    );
    await custom().patchClusterCustomObject(
      {
        ...MACHINE_CONFIG_POOL_API,
        name: 'late',
        body: { metadata: { labels: { [POOL_ENGINE_LABEL]: engineNamespace } } },
      },
      MERGE_PATCH,
    );
    const why = `${said}; hostflow's rollouts are for rpm-ostree and bootc fleets without it`;
    for (const pool of ['late', 'opted-in']) {
      const conditions = await waitFor(`${pool} to say why it is not served`, async () => {
        const found = await conditionsOf(pool);
        return found.some((c) => c.type === POOL_NOT_SERVED.type) ? found : undefined;
      });
      expect(conditions.find((c) => c.type === POOL_NOT_SERVED.type)).toMatchObject({
        status: 'False',
        reason: POOL_NOT_SERVED.reason,
        message: why,
      });
      if (pool === 'late')
        expect(conditions.find((c) => c.type === 'Updated')).toEqual(MCO_UPDATED);
    }
    await twoRelists();
    // Told once, at the first relist that found it; never served.
    expect(await toldPool('late')).toEqual([
      expect.objectContaining({ deleted: true, notServed: why }),
    ]);
    expect(await conditionsOf('unlabelled')).toEqual([]);
    expect(
      bridge
        .tail(500)
        .split('\n')
        .filter((line) => line.includes(said)),
    ).toHaveLength(1);

    await apps.deleteNamespacedDaemonSet({ namespace, name });
    await waitFor(
      'the late pool to be served',
      async () => ((await toldPool('late'))?.at(-1)?.deleted === false ? true : undefined),
      { timeoutMs: 30_000 },
    );
    expect((await readiness()).body).toBe('ok\n');
    // Served, the pool's status is hostflow's again: its reason not to serve is gone.
    await waitFor('the late pool to drop its condition', async () =>
      (await conditionsOf('late')).some((c) => c.type === 'Degraded') ? true : undefined,
    );
    expect((await conditionsOf('late')).map((c) => c.type)).not.toContain(POOL_NOT_SERVED.type);
  }, 120_000);
});
