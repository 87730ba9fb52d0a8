// One scenario two test files run, on the suite's dev server and on a production-shaped Temporal
// whose visibility lags: a static platform's allocator is lost while two builds hold the host's
// two slots and a third waits. The next allocator must count both holders before it grants
// anything (no over-commit), ask the waiter again (no one waits on an allocator that is gone),
// and begin from the slots its last run kept, not from what visibility had indexed.
import { expect } from '@jest/globals';
import { waitFor } from '../../local-stack/process.js';
import type { AllocationSummary } from '../../shared/contracts/allocator.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import type { StaticPool } from './static-pool.js';

/** The builds that hold the host's slots, the one in line, and the one that comes after the loss. */
export const LOSS_TASKRUNS = ['hold-a', 'hold-b', 'waited', 'after-loss'];

export async function loseAllocatorWhileHeld(
  pool: StaticPool,
  hooks: {
    /** With the slots held and one in line, before the allocator is terminated (its run id). */
    beforeLoss?: (lost: string) => Promise<void>;
    /** Once the new allocator answers with what it resumed. */
    afterResume?: (view: AllocationSummary) => Promise<void>;
  } = {},
): Promise<void> {
  const { scope, platform } = pool;
  const allocator = () => scope.temporal.client.workflow.getHandle(WORKFLOW_ID.allocator(platform));
  const workflowIdOf = (t: { namespace: string; name: string; uid: string }) =>
    WORKFLOW_ID.taskRun(t.namespace, t.name, t.uid);
  const buildUsers = pool.watchBuildUsers(pool.hosts[0]!);
  let most: number;
  let lost: string;
  try {
    for (const name of ['hold-a', 'hold-b']) {
      await scope.taskRuns.create({ name, platform });
      await scope.taskRuns.waitForSecret(name, 30_000);
    }
    const waited = await scope.taskRuns.create({ name: 'waited', platform });
    await waitFor('the third TaskRun in line', async () =>
      (await pool.allocator()).queue.length === 1 ? true : undefined,
    );
    lost = (await allocator().describe()).runId;
    await hooks.beforeLoss?.(lost);

    await allocator().terminate('test: the allocator is lost');
    const afterLoss = await scope.taskRuns.create({ name: 'after-loss', platform });
    const view = await waitFor('the new allocator to know both slots are taken', async () => {
      const now = await pool.allocator().catch(() => undefined);
      return now && now.inUse === 2 && now.queue.length === 2 ? now : undefined;
    });
    const inLine = view.queue.map((id) => id.slice(0, id.lastIndexOf('#')));
    expect(inLine.sort()).toEqual([waited, afterLoss].map(workflowIdOf).sort());
    expect(await scope.taskRuns.secret('waited')).toBeUndefined();
    expect(await scope.taskRuns.secret('after-loss')).toBeUndefined();
    await hooks.afterResume?.(view);

    await scope.taskRuns.complete('hold-a');
    await scope.taskRuns.complete('hold-b');
    await scope.taskRuns.waitForSecret('waited', 30_000);
    await scope.taskRuns.waitForSecret('after-loss', 30_000);
  } finally {
    most = await buildUsers.most();
  }
  expect(most).toBeLessThanOrEqual(2); // never more builds on the host than its concurrency
  const resumed = (await allocator().describe()).runId;
  expect(resumed).not.toBe(lost);
  const activities = await pool.allocatorActivities(resumed);
  expect(activities).toContain('lastSlots');
  expect(activities).not.toContain('platformTaskRuns');
  await pool.endTaskRuns(LOSS_TASKRUNS);
}
