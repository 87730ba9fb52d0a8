// Entities that cannot be fooled: a static platform's allocator that is terminated rebuilds who
// holds its slots before it grants any (no over-commit), and asks its waiters to ask again (no
// one waits on an allocator that is gone); an allocator that may not read host-config (403)
// keeps running, says why, and carries on once it may.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { hostConfigChanged } from '../shared/contracts/allocator.js';
import { createWorkerIdentity, type WorkerIdentity } from './support/service-account.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';

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

/** The activities a run of the allocator scheduled, by type. */
async function activitiesOf(runId: string): Promise<string[]> {
  const { events } = await pool.scope.temporal.client.workflow
    .getHandle(WORKFLOW_ID.allocator(pool.platform), runId)
    .fetchHistory();
  return (events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

async function currentDetails(): Promise<string> {
  const meta = (await allocator().query('__temporal_workflow_metadata')) as {
    currentDetails?: string;
  };
  return meta.currentDetails ?? '';
}

describe('a static allocator that is lost', () => {
  it('rebuilds its holders before granting, and serves the TaskRuns that waited on the old one', async () => {
    const { scope, hosts } = pool;
    const [host] = hosts;
    for (const name of ['hold-a', 'hold-b']) {
      await scope.taskRuns.create({ name, platform: pool.platform });
      await scope.taskRuns.waitForSecret(name, 30_000);
    }
    await scope.taskRuns.create({ name: 'waited', platform: pool.platform });
    await waitFor('the third TaskRun in line', async () =>
      (await pool.allocator()).queue.length === 1 ? true : undefined,
    );

    // The platform's first allocator: no one can hold a slot yet, so it did not look for holders.
    const first = (await allocator().describe()).runId;
    expect(await activitiesOf(first)).toContain('hadEarlierRun');
    expect(await activitiesOf(first)).not.toContain('platformTaskRuns');

    await allocator().terminate('test: the allocator is lost');
    // The next request starts a new allocator: it must know both slots are taken.
    await scope.taskRuns.create({ name: 'after-loss', platform: pool.platform });
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, (await pool.buildUsers(host!)).length);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      await waitFor('the new allocator to rebuild its holders', async () => {
        const view = await pool.allocator().catch(() => undefined);
        return view && view.inUse === 2 && view.queue.length === 2 ? view : undefined;
      });
      expect(await scope.taskRuns.secret('waited')).toBeUndefined();
      expect(await scope.taskRuns.secret('after-loss')).toBeUndefined();

      await scope.taskRuns.complete('hold-a');
      await scope.taskRuns.complete('hold-b');
      await scope.taskRuns.waitForSecret('waited', 30_000);
      await scope.taskRuns.waitForSecret('after-loss', 30_000);
    } finally {
      sampling = false;
      await sampler;
    }
    expect(most).toBeLessThanOrEqual(2); // never more builds on the host than its concurrency
    const rebuilt = (await allocator().describe()).runId;
    expect(await activitiesOf(rebuilt)).toContain('platformTaskRuns');
    for (const name of ['waited', 'after-loss']) await scope.taskRuns.complete(name);
    for (const name of ['hold-a', 'hold-b', 'waited', 'after-loss']) {
      await scope.taskRuns.waitForSecretGone(name);
    }
    await waitFor('every slot free', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );
    expect(await pool.buildUsers(host!)).toEqual([]);
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
