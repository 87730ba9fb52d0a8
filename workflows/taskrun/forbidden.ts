// A tenant namespace that refuses the build's Secret with 403 (a full ResourceQuota, an admission
// policy or webhook, a missing permission): nothing can be delivered there, so nothing is held
// for it. The host's slot goes back and any build user made for it goes at once; the build gets
// an `error` Secret when the namespace takes that one, and otherwise a Warning Event on the
// TaskRun says why (a Secret that cannot be written cannot carry the answer).
import { log } from '@temporalio/workflow';
import { LABELS, secretNameFor } from '../../platform-config/contract.js';
import { innermostMessage } from '../../shared/failures.js';
import type { Host } from '../../platform-config/host.js';
import type { TaskRunOutcome } from '../../shared/contracts/taskrun.js';
import { boundedCleanup } from './activity-proxies.js';
import { answerWithError, warnUnanswerable } from './answer.js';
import { giveBackSlot } from './slot.js';
import type { TaskRun } from './types.js';

export async function answerForbidden(
  run: TaskRun,
  labels: Record<string, string>,
  cause: string,
): Promise<TaskRunOutcome> {
  const { input } = run;
  await giveBackHold(run);
  run.status.host = undefined;
  const message =
    `the build's Secret ${secretNameFor(input.name)} cannot be written in namespace ` +
    `${input.namespace}: ${cause}. Free the namespace's quota or change the admission policy ` +
    'that refuses it, then retry the build.';
  log.warn('TaskRun answered: its namespace refuses its Secret', {
    namespace: input.namespace,
    name: input.name,
    cause,
  });
  try {
    return await answerWithError(run, message, {
      ...labels,
      [LABELS.waitingForPlatform]: null,
      [LABELS.assignedHost]: null,
    });
  } catch (err) {
    return warnUnanswerable(
      run,
      `${message} (the error Secret could not be written either: ${innermostMessage(err)})`,
    );
  }
}

/**
 * Removes the build users made so far (bounded: one the host keeps is removed again at
 * clean-up) and gives the slot back, so a refused build holds nothing while its TaskRun lives.
 */
async function giveBackHold(run: TaskRun): Promise<void> {
  const { pool, ref } = run;
  const kept: Host[] = [];
  await Promise.all(
    pool.touched.map(async (host) => {
      try {
        await boundedCleanup.removeBuildUser.executeWithOptions(
          { summary: `Remove the build user of this TaskRun from ${host.name} (${host.address})` },
          [{ host, taskRun: ref }],
        );
      } catch {
        kept.push(host);
      }
    }),
  );
  pool.touched = kept;
  await giveBackSlot(run);
}
