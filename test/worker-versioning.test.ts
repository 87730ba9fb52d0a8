// Worker Versioning on a production-shaped Temporal (local-stack/temporal-server.ts): two builds
// of the worker side by side in one Worker Deployment, as a blue-green upgrade runs them
// (docs/deploy.md, "Upgrading and rolling back"). The builds are the same code under two build
// ids: what is tested is where Temporal sends each workflow's tasks, which the build id alone
// decides. A TaskRun stays on the build it started on; new ones go to the current build; every
// long-lived workflow (the allocator, host-config, the collectors) moves to the current build by
// continuing as new; and a rollback moves new work back while what the newer build started
// finishes there.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '../local-stack/process.js';
import { temporalCli } from '../local-stack/temporal.js';
import { startTemporalServer, type TemporalServer } from '../local-stack/temporal-server.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { KIND, SA } from '../shared/search-attributes.js';
import type { EngineProcess } from './support/engine.js';
import { testEnv } from './support/env.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { recordIfAsked } from './support/record-histories.js';

const run = promisify(execFile);
const DEPLOYMENT = 'hostflow';

let server: TemporalServer;
let pool: StaticPool;
let second: EngineProcess | undefined;

beforeAll(async () => {
  server = await startTemporalServer({
    stateDir: join(testEnv('stateDir'), 'temporal-server-versioning'),
    persist: false,
    fixedPorts: false,
    logDir: join(testEnv('stateDir'), 'logs', 'temporal-server-versioning'),
  });
  pool = await createStaticPool('wver', 1, {
    temporal: server,
    worker: { HOSTFLOW_WORKER_DEPLOYMENT: DEPLOYMENT, HOSTFLOW_BUILD_ID: 'build-a' },
  });
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0, concurrency: 4 }]));
}, 300_000);

afterAll(async () => {
  if (server) await recordIfAsked(server.address);
  await second?.stop();
  await pool?.dispose();
  await server?.stop();
});

/** The build a workflow's run is on, and how it is versioned, as Temporal records it. */
async function versioning(
  workflowId: string,
  runId?: string,
): Promise<{ buildId?: string; behavior?: string; status: string }> {
  const handle = pool.scope.temporal.client.workflow.getHandle(workflowId, runId);
  const described = await handle.describe();
  const info = described.raw.workflowExecutionInfo?.versioningInfo;
  const behaviors = ['UNSPECIFIED', 'PINNED', 'AUTO_UPGRADE'];
  return {
    buildId: info?.deploymentVersion?.buildId ?? undefined,
    behavior: info?.behavior ? behaviors[info.behavior] : undefined,
    status: described.status.name,
  };
}

/** Makes a build current, as docs/deploy.md has the operator do it. */
async function makeCurrent(buildId: string): Promise<void> {
  await run(temporalCli(), [
    'worker',
    'deployment',
    'set-current-version',
    '--deployment-name',
    DEPLOYMENT,
    '--build-id',
    buildId,
    '--yes',
    '--address',
    server.address,
    '--namespace',
    server.namespace,
  ]);
}

/**
 * The build each long-lived workflow of the engine is on, by kind (host-config, the collectors,
 * the allocator): every one once they all are on one build.
 */
async function entitiesOn(): Promise<Record<string, string | undefined>> {
  const { client } = pool.scope.temporal;
  const query =
    `TaskQueue = '${pool.scope.taskQueue}' AND ExecutionStatus = 'Running' AND ` +
    `${SA.kind.name} != '${KIND.taskRun}'`;
  const builds: Record<string, string | undefined> = {};
  for await (const execution of client.workflow.list({ query })) {
    const kind = execution.typedSearchAttributes.get(SA.kind) ?? execution.workflowId;
    builds[kind] = (await versioning(execution.workflowId)).buildId; // its latest run
  }
  return builds;
}

/** Waits until every long-lived workflow is on `buildId`. */
async function allEntitiesOn(buildId: string): Promise<Record<string, string | undefined>> {
  return waitFor(
    `every long-lived workflow on ${buildId}`,
    async () => {
      const builds = await entitiesOn();
      return Object.values(builds).every((b) => b === buildId) ? builds : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}

async function currentBuild(): Promise<string | undefined> {
  const { workerDeploymentInfo } =
    await pool.scope.temporal.client.workflowService.describeWorkerDeployment({
      namespace: server.namespace,
      deploymentName: DEPLOYMENT,
    });
  return workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
}

describe('two builds of the worker in one Worker Deployment', () => {
  it('keeps each TaskRun on its build, sends new ones to the current build, moves the long-lived workflows at continue-as-new, and rolls back', async () => {
    const { scope, platform } = pool;
    const allocator = WORKFLOW_ID.allocator(platform);
    const taskRun = async (name: string) => {
      const created = await scope.taskRuns.create({ name, platform });
      await scope.taskRuns.waitForSecret(name, 60_000);
      return WORKFLOW_ID.taskRun(created.namespace, created.name, created.uid);
    };

    // The install's first build made itself current: the deployment had none.
    await waitFor('build-a to be current', async () =>
      (await currentBuild().catch(() => undefined)) === 'build-a' ? true : undefined,
    );
    const onA = await taskRun('on-a');
    expect(await versioning(onA)).toMatchObject({ buildId: 'build-a', behavior: 'PINNED' });
    const firstAllocatorRun = await describeRun(allocator);
    expect(await versioning(allocator)).toMatchObject({ buildId: 'build-a', behavior: 'PINNED' });

    // The upgrade: build-b starts beside build-a and serves nothing until it is made current.
    second = await pool.startWorkerAlongside({ HOSTFLOW_BUILD_ID: 'build-b' });
    await waitFor('build-b to be known to the deployment', async () => {
      try {
        await makeCurrent('build-b');
        return true;
      } catch {
        return undefined; // its pollers have not reached the server yet
      }
    });
    expect(await currentBuild()).toBe('build-b');
    const onB = await taskRun('on-b');
    expect(await versioning(onB)).toMatchObject({ buildId: 'build-b', behavior: 'PINNED' });
    // build-b, now current, woke the long-lived workflows: each saw it and continued onto it.
    expect(Object.keys(await allEntitiesOn('build-b')).sort()).toEqual(
      [KIND.allocator, KIND.cloudGc, KIND.hostConfig, KIND.taskRunGc].sort(),
    );
    expect(await versioning(allocator, firstAllocatorRun)).toMatchObject({
      buildId: 'build-a',
      status: 'CONTINUED_AS_NEW',
    });
    expect((await pool.allocator()).inUse).toBe(2); // both holders carried across

    // on-a finishes where it started: build-a cleans up after it.
    await scope.taskRuns.complete('on-a');
    await scope.taskRuns.waitForSecretGone('on-a');
    await waitFor('on-a to end', async () =>
      (await versioning(onA)).status === 'COMPLETED' ? true : undefined,
    );
    expect((await versioning(onA)).buildId).toBe('build-a');

    // The rollback: build-a is current again; what build-b started finishes on build-b.
    await makeCurrent('build-a');
    const backOnA = await taskRun('back-on-a');
    expect(await versioning(backOnA)).toMatchObject({ buildId: 'build-a', behavior: 'PINNED' });
    await allEntitiesOn('build-a');
    await scope.taskRuns.complete('on-b');
    await scope.taskRuns.waitForSecretGone('on-b');
    await waitFor('on-b to end', async () =>
      (await versioning(onB)).status === 'COMPLETED' ? true : undefined,
    );
    expect((await versioning(onB)).buildId).toBe('build-b');
    await pool.endTaskRuns(['back-on-a']);
  }, 300_000);
});

/** The run id of a workflow's current run. */
async function describeRun(workflowId: string): Promise<string> {
  return (await pool.scope.temporal.client.workflow.getHandle(workflowId).describe()).runId;
}
