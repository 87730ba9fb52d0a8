// hostflow on a production-shaped Temporal (local-stack/temporal-server.ts): the real Temporal
// server on PostgreSQL with SQL visibility, frontend, history, matching and worker as separate
// processes, as a platform team runs it. This file starts its own (the rest of the suite shares
// the dev server) and runs two engines on it: the chaos stack's (local, static sshd hosts, dynamic
// moto EC2 VMs and a pool) and one that installs a cluster on BareMetalHosts and runs a
// ClusterOperation on it (the kubespray stand-in, in real runner Jobs). The history service and
// then the matching service die by `kill -9` in the midst of it all and start again, as a crashed
// pod does. Then a static platform's allocator is lost while visibility lags (its table locked in
// PostgreSQL): the next one must still know who holds its slots.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Connection } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { runChaos } from '../bench/chaos-run.js';
import type { ChaosStack } from '../bench/chaos-stack.js';
import { expectServedAndNothingLeft, startTestChaosStack } from './support/chaos.js';
import { loadTemporalDevConfig } from '../local-stack/temporal.js';
import {
  startTemporalServer,
  type TemporalServer,
  type TemporalService,
} from '../local-stack/temporal-server.js';
import { registerBareMetalHosts, type BareMetalHosts } from './support/baremetal.js';
import { clusterOperations, installCluster } from './support/cluster-operations.js';
import { startBridge, startWorker, tearDown, type EngineProcess } from './support/engine.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import type { SearchAttributeType } from '@temporalio/common';
import { SA_TYPE_NAMES } from '../shared/search-attributes.js';
import { indexedType } from '../runtime/temporal-requirements.js';
import { kubesprayWorkerEnv } from './support/kubespray.js';
import { waitFor } from '../local-stack/process.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { holdVisibilityWrites } from './support/visibility-lag.js';
import { recordIfAsked } from './support/record-histories.js';
import { loseAllocatorWhileHeld } from './support/allocator-loss.js';
import { createScope, type TestScope } from './support/scope.js';
import { hostflowIn } from './support/hostflow-cli.js';
import type { UpgradeCheck } from '../cli/upgrade.js';

let scope: TestScope;
let server: TemporalServer;
let stack: ChaosStack;
/** The Provisioning's engine: its own scope, worker and bridge on the same Temporal. */
const sfx = uniqueSuffix();
/** Before this file's first workflow: `hostflow upgrade check` counts from here. */
const startedAt = new Date().toISOString();
let opsScope: TestScope;
let metal: BareMetalHosts;
let opsEngine: EngineProcess[] = [];

beforeAll(async () => {
  const logDir = join(testEnv('stateDir'), 'logs', 'temporal-server');
  server = await startTemporalServer({
    stateDir: join(testEnv('stateDir'), 'temporal-server'),
    persist: false,
    fixedPorts: false,
    logDir,
  });
  scope = await createScope('tsrv');
  stack = await startTestChaosStack(scope, { subnetCidr: '10.231.144.0/20', temporal: server });
  opsScope = await createScope('tsrvop');
  metal = await registerBareMetalHosts(opsScope, { count: 2, sfx });
  const onServer = { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace };
  opsEngine = [
    await startWorker(opsScope, {
      ...kubesprayWorkerEnv(sfx),
      HOSTFLOW_BAREMETAL_NAMESPACES: metal.namespace,
      ...onServer,
    }),
    await startBridge(opsScope, onServer),
  ];
}, 300_000);

afterAll(async () => {
  if (server) await recordIfAsked(server.address);
  await stack?.stop();
  await tearDown(opsEngine, metal, opsScope);
  await scope?.dispose();
  await server?.stop();
});

describe('a production-shaped Temporal: the server on PostgreSQL, four services apart', () => {
  it('serves the namespace with hostflow’s search attributes, each of its declared type', async () => {
    expect(server.version).toMatch(/^1\.\d+\.\d+/);
    const connection = await Connection.connect({ address: server.address });
    try {
      const { customAttributes } = await connection.operatorService.listSearchAttributes({
        namespace: server.namespace,
      });
      const { searchAttributes } = loadTemporalDevConfig();
      const declared = Object.fromEntries(
        Object.entries(searchAttributes).map(([name, type]) => [name, indexedTypeNamed(type)]),
      );
      const served = Object.fromEntries(
        Object.keys(declared).map((name) => [name, customAttributes?.[name]]),
      );
      expect(served).toEqual(declared);
    } finally {
      await connection.close();
    }
  });

  it('serves every build of a burst and runs a ClusterOperation while history and then matching die by kill -9, and leaves nothing behind', async () => {
    // The chaos run kills what it is given: here the Temporal services, one after the other, each
    // started again a few seconds later (a pod's restart), while the engine's processes live.
    const order: TemporalService[] = ['history', 'matching'];
    let killed = 0;
    stack.target.processes = [
      {
        get name() {
          return `temporal ${order[killed % order.length]}`;
        },
        kill: async () => {
          const service = server.service(order[killed++ % order.length]!);
          await service.kill();
          await sleep(3_000);
          await service.start();
        },
      },
    ];
    // A cluster installed and upgraded on the BareMetalHosts, from the start of the burst.
    const ops = clusterOperations(opsScope, metal, { name: 'ops', cluster: 'tsrv' });
    const operation = (async () => {
      await installCluster(opsScope, metal, { name: 'ops', cluster: 'tsrv', workers: [1] });
      await ops.operate('upgrade', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.1' },
      });
      return ops.ended('upgrade', 240_000);
    })();
    const report = await runChaos(stack.target, {
      taskRuns: 24,
      kills: 2,
      seed: 7,
      buildMs: [1_000, 6_000],
      spreadMs: 20_000,
      timeoutMs: 420_000,
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(report));
    expect(await operation).toMatchObject({ phase: 'Succeeded' });
    expect(await ops.versions()).toEqual(['1.35.1', '1.35.1']);
    expect(await ops.noted('upgrade')).toMatchObject({ phase: 'Ready', kubeVersion: '1.35.1' });
    expect(report.kills).toBe(2);
    expectServedAndNothingLeft(report, 24);
  }, 480_000);

  it('counts in SQL visibility what each step from 0.x to 1.0 waits for, and 1.0 runs hold no 0.x marker', async () => {
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
    };
    const check = async (to: string, since: string) => {
      const result = await hostflowIn(
        env,
        'upgrade',
        'check',
        '--to',
        to,
        '--since',
        since,
        '-o',
        'json',
      );
      expect(result.stderr).toBe('');
      return { code: result.code, ...(JSON.parse(result.stdout) as UpgradeCheck) };
    };
    const now = new Date().toISOString();
    // Before this file's first run, nothing: 0.9 may roll out.
    expect(await check('0.9', startedAt)).toMatchObject({ code: 0, running: 0, closed: 0 });
    // Every run so far started before now: the burst's TaskRuns ended, its allocators run on.
    const waiting = await check('0.9', now);
    expect(waiting).toMatchObject({ code: 1, ready: false });
    expect(waiting.running).toBeGreaterThan(0);
    // The burst's allocators and host-config stay open until they continue as new.
    expect(waiting.runningByType).toMatchObject({ allocatorWorkflow: expect.any(Number) });
    expect(waiting.closed).toBeGreaterThanOrEqual(24);
    expect(waiting.retention).not.toBe('unknown');
    // Bad arguments are refused before anything is asked, saying what to give.
    const refused = await hostflowIn(
      env,
      'upgrade',
      'check',
      '--to',
      '0.8',
      '--since',
      'yesterday',
    );
    expect(refused).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--to must be 0.9 or 1.0, not 0.8'),
    });
    const badTime = await hostflowIn(
      env,
      'upgrade',
      'check',
      '--to',
      '1.0',
      '--since',
      'yesterday',
    );
    expect(badTime).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--since must be an RFC 3339 time'),
    });
    // 1.0 writes no marker of 0.x: nothing its step waits for, though all those runs are there.
    expect(await check('1.0', now)).toMatchObject({ code: 0, running: 0, closed: 0 });
  });
});

describe('a static allocator lost while visibility lags', () => {
  let pool: StaticPool;

  beforeAll(async () => {
    pool = await createStaticPool('tsvis', 1, { temporal: server });
    await pool.scope.setHostConfig(pool.hostEntries([{ host: 0, concurrency: 2 }]));
  }, 120_000);

  afterAll(async () => {
    await pool?.dispose();
  });

  it('resumes exactly who holds its slots and who waits from its last run, not from visibility', async () => {
    const { scope, platform } = pool;
    const { client } = scope.temporal;
    const visible = async (query: string): Promise<number> => {
      let count = 0;
      for await (const execution of client.workflow.list({ query })) if (execution) count++;
      return count;
    };
    // The platform's allocator has run, and visibility has indexed it.
    await scope.taskRuns.create({ name: 'first', platform });
    await scope.taskRuns.waitForSecret('first', 30_000);
    await scope.taskRuns.complete('first');
    await scope.taskRuns.waitForSecretGone('first');
    const serving =
      `${SA.kind.name} = '${KIND.taskRun}' AND ${SA.platform.name} = '${platform}' AND ` +
      `ExecutionStatus = 'Running'`;
    await waitFor('visibility to index the allocator, and the first TaskRun as ended', async () =>
      (await visible(`WorkflowId = '${WORKFLOW_ID.allocator(platform)}'`)) > 0 &&
      (await visible(serving)) === 0
        ? true
        : undefined,
    );

    // Visibility indexes nothing from here on, until the new allocator has answered.
    const lag = await holdVisibilityWrites(server);
    try {
      await loseAllocatorWhileHeld(pool, {
        // A rebuild from visibility would find no holder, and grant both slots again.
        beforeLoss: async () => expect(await visible(serving)).toBe(0),
        afterResume: async () => {
          expect(await visible(serving)).toBe(0); // still lagging: the slots came from the lost run
          await lag.release();
        },
      });
    } finally {
      await lag.release();
    }
  }, 240_000);
});

/** The proto type number of a type as temporal-dev.yaml names it (`Keyword`). */
function indexedTypeNamed(name: string): number | undefined {
  const type = Object.entries(SA_TYPE_NAMES).find(([, spelled]) => spelled === name)?.[0];
  return type === undefined ? undefined : indexedType(type as SearchAttributeType);
}
