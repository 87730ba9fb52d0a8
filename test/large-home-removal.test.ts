// Removing a build user whose home takes long to delete (a home full of container layers) runs
// to completion in one attempt: the removal heartbeats instead of racing a timeout. Here the
// deletion is held up for longer than the two minutes a removal used to be allowed, by stopping
// the host's `rm` (SIGSTOP) while it works, then letting it go on.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';

const HELD_MS = 130_000;
let pool: StaticPool;

beforeAll(async () => {
  pool = await createStaticPool('bighome', 1);
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

describe('removing a build user with a large home', () => {
  it('is not cut off by a timeout: one attempt, however long the deletion takes', async () => {
    const { scope, hosts } = pool;
    const [host] = hosts as [(typeof hosts)[number]];
    const tr = await scope.taskRuns.create({ name: 'big-home', platform: pool.platform });
    const secret = await scope.taskRuns.waitForSecret(tr.name, 30_000);
    const user = secret.host!.split('@')[0]!;
    // 100,000 files: their deletion is long enough to be caught in the act.
    const fill = `mkdir -p /home/${user}/build/layers && cd /home/${user}/build/layers && seq 1 100000 | xargs touch && chown -R ${user}: /home/${user}/build`;
    expect((await host.exec(['sh', '-c', fill])).code).toBe(0);

    await scope.taskRuns.complete(tr.name);
    const rm = await waitFor(
      'the deletion of the home to start',
      async () => {
        // whatever deletes the home: `rm` of the home moved aside (`userdel -r` before)
        const deleting = '^(rm -rf --one-file-system -- /home/|userdel -f -r )';
        const { stdout } = await host.exec(['pgrep', '-f', deleting]);
        return stdout.trim() ? Number(stdout.trim().split('\n')[0]) : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    process.kill(rm, 'SIGSTOP');
    const t0 = Date.now();
    try {
      await new Promise((r) => setTimeout(r, HELD_MS));
    } finally {
      process.kill(rm, 'SIGCONT');
    }
    await scope.taskRuns.waitForSecretGone(tr.name, 120_000);
    console.log(`removal finished ${Date.now() - t0} ms after the deletion was held up`);
    expect(await pool.buildUsers(host)).toEqual([]);
    const left = await host.exec(['find', '/home', '-maxdepth', '2', '-name', `${user}*`]);
    expect(left.stdout.trim()).toBe('');

    const history = await scope.temporal.client.workflow
      .getHandle(WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid))
      .fetchHistory();
    const removals = history.events!.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'removeBuildUser',
    );
    expect(removals).toHaveLength(1);
    const attempts = history
      .events!.filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 1);
    expect(Math.max(...attempts)).toBe(1);
  }, 300_000);
});
