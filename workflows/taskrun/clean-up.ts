// Clean-up for every kind of TaskRun (docs/architecture.md, "The TaskRun contract"): terminate the VMs it launched,
// remove its build users from every host it touched (the serving host's until it succeeds),
// delete its Secret, give its slot back. Runs when the TaskRun completes or is deleted, even
// when the workflow is cancelled (the caller runs it in a non-cancellable scope).
import { ORIGINAL_FINALIZER } from '../../platform-config/contract.js';
import { innermostMessage } from '../../shared/failures.js';
import type { Host } from '../../platform-config/host.js';
import { boundedCleanup, durableCleanup } from './activity-proxies.js';
import { giveSlotBack } from '../kit/allocator-slot.js';
import { metrics } from '../metrics.js';
import { terminateVms } from './cloud-vm.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import type { TaskRun } from './types.js';

export async function cleanUpTaskRun(run: TaskRun): Promise<void> {
  const { pool, ref, input, status } = run;
  await terminateVms(run, run.cloud);
  const remove = async (host: Host) => {
    const serving = host.name === pool.serving?.name;
    // A pool VM is retired at max-age anyway, and may be gone: its clean-up is bounded.
    const durable = serving && !run.cloud?.pool;
    try {
      await (durable ? durableCleanup : boundedCleanup).removeBuildUser.executeWithOptions(
        {
          summary: `Remove build user ${status.user ?? 'of this TaskRun'} from ${host.name} (${host.address})`,
        },
        [{ host, taskRun: ref, ...(serving && status.user ? { user: status.user } : {}) }],
      );
    } catch (err) {
      metrics.cleanupFailures.add(1, { platform: input.platform, host: host.name });
      await note(
        run,
        'Warning',
        'CleanupFailed',
        `Could not remove the build user from ${host.name}: ${innermostMessage(err)}`,
        `${pool.attempt}`,
      );
    }
  };
  // Failed hosts may be gone: their build users do not hold up the Secret and the slot.
  const failedOnly = pool.touched.filter((host) => host.name !== pool.serving?.name);
  const failedDone = Promise.all(failedOnly.map(remove));
  await Promise.all(pool.touched.filter((host) => !failedOnly.includes(host)).map(remove));
  await taskRunKube(run).deleteSecret();
  await releaseOriginalFinalizer(run);
  if (pool.requestId) await giveSlotBack(input.platform, pool.requestId);
  await failedDone;
  if (pool.touched.length > 0) {
    await note(
      run,
      'Normal',
      'CleanedUp',
      `Removed the build user from ${pool.touched.map((h) => h.name).join(', ')}`,
      `${pool.attempt}`,
    );
  }
}

/**
 * Only for a TaskRun that has ended: a workflow cancelled by hand while its build runs leaves the
 * finalizer to the run the bridge starts next.
 */
async function releaseOriginalFinalizer(run: TaskRun): Promise<void> {
  if (!run.status.originalFinalizer || !run.ended()) return;
  if ((await taskRunKube(run).releaseOriginalFinalizer()) !== 'released') return;
  await note(
    run,
    'Normal',
    'OriginalFinalizerRemoved',
    `Removed the finalizer ${ORIGINAL_FINALIZER} the multi-platform controller left: hostflow ` +
      'cleaned up in its place',
    'original-finalizer',
  );
}
