// Families an install chooses (HOSTFLOW_FAMILIES, shared/families.ts). A TaskRun-only install runs
// on a second, real cluster (its own etcd and kube-apiserver) that has Tekton's TaskRun CRD and
// none of the other families' CRDs, with its own Temporal namespace as docs/deploy.md asks, as the
// accounts of deploy/overlays/taskruns-only with exactly their RBAC: it is Ready, serves a build,
// and is refused nothing. An install that runs a family whose CRD is missing says which CRD and
// where it comes from, in its readiness and its log, instead of waiting in silence; a family it
// does not know stops it at start.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { engineCommand, startEngineProcess, type EngineKind } from '../local-stack/engine.js';
import { freePort } from '../local-stack/ports.js';
import { waitFor } from '../local-stack/process.js';
import { registerNamespace } from '../local-stack/temporal.js';
import { refusedCalls, tearDown, type EngineProcess } from './support/engine.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import {
  overlayAccounts,
  serveLocalTaskRuns,
  startOtherCluster,
  type OtherCluster,
} from './support/other-cluster.js';
import { TaskRuns } from './support/taskruns.js';

const run = promisify(execFile);
const suffix = uniqueSuffix();
const namespace = `families-${suffix}`;
const engineNamespace = `families-engine-${suffix}`;

let other: OtherCluster;
let taskRuns: TaskRuns;
let worker: EngineProcess;
let bridge: EngineProcess;
let health: string;

/** An engine process's settings on the second cluster: its own Temporal namespace and queue. */
const settingsOn = (families: string): NodeJS.ProcessEnv => ({
  TEMPORAL_ADDRESS: testEnv('temporalAddress'),
  TEMPORAL_NAMESPACE: `hostflow-families-${suffix}`,
  KUBECONFIG: other.server.kubeconfigPath,
  HOSTFLOW_NAMESPACE: engineNamespace,
  HOSTFLOW_TASK_QUEUE: `hostflow-families-${suffix}`,
  HOSTFLOW_WATCH_NAMESPACE: namespace,
  HOSTFLOW_WORKFLOW_BUNDLE: testEnv('workflowBundle'),
  HOSTFLOW_FAMILIES: families,
});

async function startOn(kind: EngineKind, name: string, env: NodeJS.ProcessEnv) {
  return startEngineProcess(kind, env, { name, logFile: join(other.logDir, `${name}.log`) });
}

/** The /readyz answer once it is `status`. */
const readiness = (base: string, status: number) =>
  waitFor(
    `${base}/readyz to answer ${status}`,
    async () => {
      const answer = await fetch(`${base}/readyz`).catch(() => undefined);
      return answer?.status === status ? answer.text() : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );

beforeAll(async () => {
  other = await startOtherCluster('families-cluster');
  const { kc } = other;
  const core = kc.makeApiClient(CoreV1Api);
  await serveLocalTaskRuns(other, namespace, engineNamespace);
  taskRuns = new TaskRuns(core, kc.makeApiClient(CustomObjectsApi), namespace);
  await registerNamespace(testEnv('temporalAddress'), `hostflow-families-${suffix}`);
  const accountOf = await overlayAccounts(other, 'deploy/overlays/taskruns-only', engineNamespace);
  const address = `127.0.0.1:${await freePort()}`;
  health = `http://${address}`;
  [worker, bridge] = await Promise.all([
    startOn('worker', 'worker-taskruns', {
      ...settingsOn('taskruns'),
      KUBECONFIG: await accountOf('worker'),
    }),
    startOn('bridge', 'bridge-taskruns', {
      ...settingsOn('taskruns'),
      KUBECONFIG: await accountOf('bridge'),
      HOSTFLOW_HEALTH_ADDRESS: address,
    }),
  ]);
}, 180_000);

afterAll(async () => {
  await tearDown([worker, bridge]);
  await other?.server.stop();
});

describe('a TaskRun-only install', () => {
  it('is Ready on a cluster with only the TaskRun CRD, and serves a build', async () => {
    expect(await readiness(health, 200)).toBe('ok\n');
    await taskRuns.create({ name: 'served', platform: 'linux/amd64' });
    expect(await taskRuns.waitForSecret('served', 60_000)).toEqual({ host: 'localhost' });
    await taskRuns.complete('served');
    await taskRuns.waitForSecretGone('served', 60_000);
    expect(bridge.tail(200)).toContain('hostflow bridge watching for taskruns on ');
    for (const engine of [worker, bridge]) {
      const refused = refusedCalls(engine.tail(2000));
      expect({ engine: engine.name, refused }).toEqual({ engine: engine.name, refused: [] });
    }
  });

  it("registers only its family's workflows: another family's workflow fails its task, naming itself", async () => {
    const connection = await Connection.connect({ address: testEnv('temporalAddress') });
    try {
      const client = new Client({ connection, namespace: settingsOn('').TEMPORAL_NAMESPACE! });
      const handle = await client.workflow.start('provisioningWorkflow', {
        workflowId: `families-not-served-${suffix}`,
        taskQueue: settingsOn('').HOSTFLOW_TASK_QUEUE!,
        args: [],
      });
      const failure = await waitFor('its workflow task to fail', async () => {
        const { events } = await handle.fetchHistory();
        return events?.find((e) => e.workflowTaskFailedEventAttributes)
          ?.workflowTaskFailedEventAttributes?.failure?.message;
      });
      expect(failure).toBe(
        "Failed to initialize workflow of type 'provisioningWorkflow': no such function is exported by the workflow bundle",
      );
      await handle.terminate('test: no install of this namespace runs Provisionings');
    } finally {
      await connection.close();
    }
  });
});

describe('an install that runs a family whose CRD is missing', () => {
  it('names the CRD and where it comes from, in its readiness and its log', async () => {
    // As the cluster's admin, who may list what is not there: the API server answers 404.
    const address = `127.0.0.1:${await freePort()}`;
    const machines = await startOn('bridge', 'bridge-machines', {
      ...settingsOn('taskruns,machines'),
      HOSTFLOW_HEALTH_ADDRESS: address,
    });
    try {
      const missing = (plural: string, from: string) =>
        `the API server serves no ${plural}: its CRD is missing (${from})`;
      // Until the TaskRun and host-config watches have listed, readiness names them too.
      const text = await waitFor(
        'readiness to name only the missing CRD',
        async () => {
          const answer = await fetch(`http://${address}/readyz`).catch(() => undefined);
          const body = (await answer?.text()) ?? '';
          return answer?.status === 503 && body.includes('CRD is missing') && !body.includes(', ')
            ? body
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      const hostflowMachines = missing(
        'infrastructure.hostflow.dev/v1alpha1/hostflowmachines',
        'deploy/families/machines in your overlay',
      );
      expect(text).toBe(`not yet listed: HostflowMachine watch (${hostflowMachines})\n`);
      expect(machines.tail(200)).toContain(hostflowMachines);
    } finally {
      await machines.stop();
    }
  });
});

describe('HOSTFLOW_FAMILIES', () => {
  /** A bridge started with `families`: its exit code and its last log line's message. */
  async function bridgeWith(families: string) {
    const { args, env } = await engineCommand('bridge');
    const failed = (await run(process.execPath, args, {
      env: { ...process.env, ...env, ...settingsOn(families) },
      timeout: 60_000,
    }).then(
      () => ({ code: 0, stdout: '' }),
      (err: unknown) => err,
    )) as { code: number; stdout: string };
    const last = failed.stdout.trim().split('\n').at(-1) || '{}';
    return { code: failed.code, msg: (JSON.parse(last) as { msg?: string }).msg };
  }

  it('stops the bridge at start when it names a family there is not, or leaves out one a family needs', async () => {
    const settings = 'hostflow bridge: invalid hostflow settings in the environment:\n';
    expect(await bridgeWith('taskruns, builds')).toEqual({
      code: 1,
      msg:
        settings +
        '  HOSTFLOW_FAMILIES: unknown family "builds"; the families are taskruns, ' +
        'provisionings, cluster-operations, machines, rollouts, locks',
    });
    expect(await bridgeWith('cluster-operations')).toEqual({
      code: 1,
      msg:
        settings +
        '  HOSTFLOW_FAMILIES: cluster-operations needs provisionings: add it to the list',
    });
  });
});
