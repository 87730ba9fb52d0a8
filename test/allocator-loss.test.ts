// Entities that cannot be fooled: a static platform's allocator that is terminated begins from
// who held its slots before it grants any (no over-commit), and asks its waiters to ask again (no
// one waits on an allocator that is gone); an allocator that may not read host-config (403)
// keeps running, says why, and carries on once it may.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { hostConfigChanged } from '../shared/contracts/allocator.js';
import { createWorkerIdentity, type WorkerIdentity } from './support/service-account.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { loseAllocatorWhileHeld } from './support/allocator-loss.js';

let pool: StaticPool;

beforeAll(async () => {
  pool = await createStaticPool('alloss', 1);
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0, concurrency: 2 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

const allocator = () =>
  pool.scope.temporal.client.workflow.getHandle(WORKFLOW_ID.allocator(pool.platform));

async function currentDetails(): Promise<string> {
  const meta = (await allocator().query('__temporal_workflow_metadata')) as {
    currentDetails?: string;
  };
  return meta.currentDetails ?? '';
}

describe('a static allocator that is lost', () => {
  it('knows who held its slots before granting, and serves the TaskRuns that waited on the old one', async () => {
    await loseAllocatorWhileHeld(pool, {
      // The platform's first allocator: no one could hold a slot, so it looked for no holders.
      beforeLoss: async (first) => {
        const activities = await pool.allocatorActivities(first);
        expect(activities).toContain('lastSlots');
        expect(activities).not.toContain('platformTaskRuns');
      },
    });
  });
});

describe('an allocator that may not read host-config', () => {
  let identity: WorkerIdentity;

  beforeAll(async () => {
    identity = await createWorkerIdentity(pool.scope.kube.kc, pool.scope.engineNamespace);
    await pool.restartWorkerWith({ KUBECONFIG: identity.kubeconfigPath });
  });

  afterAll(async () => {
    await pool.restartWorkerWith({});
    await identity?.dispose();
  });

  it('keeps running on what it read last, says why, and carries on once it may read again', async () => {
    const { scope } = pool;
    await scope.taskRuns.create({ name: 'before-403', platform: pool.platform });
    await scope.taskRuns.waitForSecret('before-403', 30_000);

    await identity.revokeConfigMaps();
    // host-config changes: the host-config entity cannot read it any more than the allocator.
    await scope.setHostConfig(pool.hostEntries([{ host: 0, concurrency: 3 }]));
    const hostConfig = scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.hostConfig(scope.engineNamespace),
    );
    const hostConfigDetails = async () =>
      ((await hostConfig.query('__temporal_workflow_metadata')) as { currentDetails?: string })
        .currentDetails ?? '';
    await waitFor(
      'the host-config entity to say it cannot read it',
      async () =>
        (await hostConfigDetails()).includes('cannot read and check it') ? true : undefined,
      { timeoutMs: 60_000 },
    );
    expect(await hostConfigDetails()).toMatch(/forbidden/i);
    // The allocator, told to reload (as the host-config entity does once it can), is refused too.
    await allocator().signal(hostConfigChanged);
    await waitFor(
      'the allocator to say it cannot read host-config',
      async () => ((await currentDetails()).includes('Cannot read host-config') ? true : undefined),
      { timeoutMs: 60_000 },
    );
    expect(await currentDetails()).toMatch(/forbidden/i);
    for (const handle of [allocator(), hostConfig]) {
      expect((await handle.describe()).status.name).toBe('RUNNING');
    }

    // Builds still end well: this one waits for the permission, then is served.
    await scope.taskRuns.create({ name: 'during-403', platform: pool.platform });
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await scope.taskRuns.secret('during-403')).toBeUndefined();

    await identity.restoreConfigMaps();
    await scope.taskRuns.waitForSecret('during-403', 90_000);
    await waitFor(
      'the allocator to read host-config again (3 slots)',
      async () => ((await pool.allocator()).capacity === 3 ? true : undefined),
      { timeoutMs: 90_000 },
    );
    expect(await currentDetails()).not.toContain('Cannot read host-config');
    for (const name of ['before-403', 'during-403']) await scope.taskRuns.complete(name);
    for (const name of ['before-403', 'during-403']) await scope.taskRuns.waitForSecretGone(name);
  });
});
