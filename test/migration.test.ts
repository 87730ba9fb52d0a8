// Moving from the original multi-platform controller (docs/deploy.md, "Moving from the original
// controller"). The original's own binary, built from its unmodified source as the peer benchmark
// builds it, serves a burst of local-platform TaskRuns on a second real cluster and is stopped
// midway, as scaling its Deployment to zero stops it. More TaskRuns arrive while nothing serves;
// some it served end, some are deleted. hostflow then starts there as deploy/overlays/taskruns-only
// installs it, with exactly that overlay's RBAC, and takes over: every TaskRun is served or
// cleaned up, and none that has ended keeps the original's finalizer. No Tekton controller can
// run here: the test does Tekton's part (status.taskSpec on create, completion), as every
// TaskRun test does (support/taskruns.ts).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { join } from 'node:path';
import { startEngineProcess } from '../local-stack/engine.js';
import {
  ensureOriginalController,
  startOriginalController,
} from '../local-stack/original-controller.js';
import type { ManagedProcess } from '../local-stack/process.js';
import { waitFor } from '../local-stack/process.js';
import { registerNamespace } from '../local-stack/temporal.js';
import { ANNOTATIONS, ORIGINAL_FINALIZER } from '../platform-config/contract.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { engineEnv, refusedCalls, tearDown, type EngineProcess } from './support/engine.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import {
  overlayAccounts,
  serveLocalTaskRuns,
  startOtherCluster,
  type OtherCluster,
} from './support/other-cluster.js';
import { decode, TaskRuns } from './support/taskruns.js';

const suffix = uniqueSuffix();
const namespace = `moving-${suffix}`;
const engineNamespace = `moving-engine-${suffix}`;
/** TaskRuns created while the original runs, and after it stopped. */
const BEFORE = 16;
const AFTER = 6;
const names = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

let other: OtherCluster;
let taskRuns: TaskRuns;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let original: ManagedProcess | undefined;
let engine: EngineProcess[] = [];

interface Seen {
  exists: boolean;
  finalizers: string[];
  deleting: boolean;
}

async function seen(name: string): Promise<Seen> {
  try {
    const obj = (await custom.getNamespacedCustomObject({ ...TASKRUN_API, namespace, name })) as {
      metadata: { finalizers?: string[]; deletionTimestamp?: string };
    };
    const { finalizers = [], deletionTimestamp } = obj.metadata;
    return { exists: true, finalizers, deleting: Boolean(deletionTimestamp) };
  } catch (err) {
    if ((err as { code?: number }).code === 404)
      return { exists: false, finalizers: [], deleting: false };
    throw err;
  }
}

/** Whether hostflow wrote the TaskRun's Secret: the original marks its Secrets otherwise. */
async function servedByHostflow(name: string): Promise<Record<string, string> | undefined> {
  const secret = await taskRuns.secret(name);
  return secret?.metadata?.annotations?.[ANNOTATIONS.ownerUid] ? decode(secret) : undefined;
}

async function startHostflow(): Promise<EngineProcess[]> {
  const temporalNamespace = `hostflow-moving-${suffix}`;
  await registerNamespace(testEnv('temporalAddress'), temporalNamespace);
  const accountOf = await overlayAccounts(other, 'deploy/overlays/taskruns-only', engineNamespace);
  // The shared engine's settings, but on this cluster, in its own Temporal namespace.
  const start = async (kind: 'worker' | 'bridge') =>
    startEngineProcess(
      kind,
      {
        ...engineEnv({ namespace, engineNamespace, taskQueue: temporalNamespace }),
        TEMPORAL_NAMESPACE: temporalNamespace,
        KUBECONFIG: await accountOf(kind),
        HOSTFLOW_FAMILIES: 'taskruns',
      },
      { name: `${kind}-moving`, logFile: join(other.logDir, `${kind}.log`) },
    );
  return Promise.all([start('worker'), start('bridge')]);
}

beforeAll(async () => {
  const binary = await ensureOriginalController();
  other = await startOtherCluster('moving-cluster');
  custom = other.kc.makeApiClient(CustomObjectsApi);
  core = other.kc.makeApiClient(CoreV1Api);
  // The same host-config serves both: the original reads it, and so does hostflow.
  await serveLocalTaskRuns(other, namespace, engineNamespace);
  taskRuns = new TaskRuns(core, custom, namespace);
  original = await startOriginalController({
    binary,
    kubeconfig: other.server.kubeconfigPath,
    namespace: engineNamespace,
    logFile: join(other.logDir, 'original-controller.log'),
  });
}, 900_000);

afterAll(async () => {
  await tearDown([original, ...engine]);
  await other?.server.stop();
});

describe('moving from the original controller', () => {
  it('takes over a burst the original was serving when it stopped: every TaskRun served or cleaned up, no finalizer of it left on one that ended', async () => {
    // The burst, and the original stopped in its midst: once it has served a few.
    const burst = names('burst', BEFORE);
    const creating = (async () => {
      for (const name of burst) await taskRuns.create({ name, platform: 'linux/amd64' });
    })();
    await waitFor(
      'the original to serve a few of the burst',
      async () => {
        const served = await Promise.all(burst.map((n) => taskRuns.secret(n)));
        return served.filter(Boolean).length >= 4 ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    await original!.stop();
    await creating;
    const late = names('late', AFTER);
    for (const name of late) await taskRuns.create({ name, platform: 'linux/amd64' });

    // What it left: TaskRuns it served (its finalizer, its Secret), and others it never reached.
    const left = await Promise.all(burst.map(async (name) => ({ name, ...(await seen(name)) })));
    const held = left.filter((t) => t.finalizers.includes(ORIGINAL_FINALIZER)).map((t) => t.name);
    expect(held.length).toBeGreaterThanOrEqual(4);
    // While nothing serves: three it served end, two it served are deleted (its finalizer holds
    // them), and one nobody served ends too.
    const ended = held.slice(0, 3);
    const deleted = held.slice(3, 5);
    for (const name of [...ended, late[0]!]) await taskRuns.complete(name);
    for (const name of deleted) await taskRuns.delete(name);
    for (const name of deleted) expect((await seen(name)).deleting).toBe(true);
    const running = [...burst, ...late].filter(
      (n) => !ended.includes(n) && !deleted.includes(n) && n !== late[0],
    );

    engine = await startHostflow();

    // Every TaskRun still running is served by hostflow, the original's answers replaced.
    for (const name of running) {
      const data = await waitFor(`hostflow to serve ${name}`, () => servedByHostflow(name), {
        timeoutMs: 90_000,
        intervalMs: 200,
      });
      expect({ name, data }).toEqual({ name, data: { host: 'localhost' } });
    }
    // Those that ended are cleaned up, the original's finalizer released with an Event.
    for (const name of [...ended, late[0]!]) {
      await taskRuns.waitForSecretGone(name, 90_000);
      await waitFor(
        `${name} to lose the original's finalizer`,
        async () =>
          !(await seen(name)).finalizers.includes(ORIGINAL_FINALIZER) ? true : undefined,
        { timeoutMs: 60_000, intervalMs: 200 },
      );
    }
    // Those deleted go: nothing holds them any more.
    for (const name of deleted) {
      await waitFor(
        `${name} to be gone`,
        async () => (!(await seen(name)).exists ? true : undefined),
        {
          timeoutMs: 90_000,
          intervalMs: 200,
        },
      );
    }
    const events = await core.listNamespacedEvent({ namespace });
    const released = new Set(
      events.items
        .filter((e) => e.reason === 'OriginalFinalizerRemoved')
        .map((e) => e.involvedObject.name),
    );
    for (const name of ended)
      expect({ name, released: released.has(name) }).toEqual({
        name,
        released: true,
      });
    expect(released.has(late[0]!)).toBe(false); // it never had it

    // The rest end; afterwards no TaskRun keeps the original's finalizer, and no Secret is left.
    for (const name of running) await taskRuns.complete(name);
    for (const name of running) await taskRuns.waitForSecretGone(name, 90_000);
    const all = [...burst, ...late];
    await waitFor(
      "no TaskRun to keep the original's finalizer",
      async () => {
        const now = await Promise.all(all.map(async (name) => ({ name, ...(await seen(name)) })));
        return now.every((t) => !t.finalizers.includes(ORIGINAL_FINALIZER)) ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    // Within the taskruns-only overlay's rights: nothing was refused.
    for (const process of engine) {
      const refused = refusedCalls(process.tail(5000));
      expect({ engine: process.name, refused }).toEqual({ engine: process.name, refused: [] });
    }
  });
});
