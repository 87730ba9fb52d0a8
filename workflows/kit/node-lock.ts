// Holding a Node's Lock (docs/architecture.md, "The workflow kit"): while a workflow drains,
// updates or deletes a Node, a Lock (namespace cluster-locks, named like the Node) refuses
// everyone else's UPDATE and DELETE of it. Taking the Lock never holds the work up; letting go of
// it is retried until it succeeds, because a Lock left behind would refuse the Node forever.
import {
  getCurrentDetails,
  log,
  patched,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import { CLUSTER_LOCKS_NAMESPACE } from '../../shared/lock-api.js';
import { locks } from '../activities.js';
import { backoffMs, failureOf, untilDeadline } from './retry.js';

/** The longest wait between two tries to let go of the Lock. */
const MAX_UNLOCK_WAIT_MS = 30_000;

/**
 * Locks `node` for this workflow, saying `reason` to whoever is refused. A Lock that cannot be
 * taken is told to `onNotLocked`, and the work goes on without it.
 */
export async function lockNode(
  node: string,
  reason: string,
  onNotLocked: (cause: string) => Promise<void> = async () => undefined,
): Promise<void> {
  const target = {
    namespace: CLUSTER_LOCKS_NAMESPACE,
    name: node,
    resource: 'nodes',
    apiGroup: '',
    operations: ['UPDATE' as const, 'DELETE' as const],
    reason,
  };
  await locks
    .syncLocks({ holder: workflowInfo().workflowId, wanted: [target] })
    .catch((err: unknown) => onNotLocked(innermostMessage(err)));
}

export interface UnlockOptions {
  /**
   * Runs recorded before the patch `patch` gave up after `tries` failed tries (each followed by
   * its wait); they replay so. Without it, or once patched, the release is tried until it is done.
   */
  before?: { patch: string; tries: number };
}

/** Lets go of this workflow's Node Locks, trying until that succeeds, saying so in its details. */
export async function unlockNode(options: UnlockOptions = {}): Promise<void> {
  const details = getCurrentDetails();
  let tries = Infinity;
  await untilDeadline(
    async (attempt) => {
      if (attempt > tries) return undefined; // given up, as runs before the patch did
      const holder = workflowInfo().workflowId;
      const err = await failureOf(() =>
        locks.syncLocks({ holder, wanted: [], alsoIn: [CLUSTER_LOCKS_NAMESPACE] }),
      );
      const { before } = options;
      if (err !== undefined && attempt === 1 && before && !patched(before.patch)) {
        tries = before.tries;
      }
      return err;
    },
    {
      isDone: (err) => err === undefined,
      timeoutMs: undefined,
      maxWaitMs: MAX_UNLOCK_WAIT_MS,
      onPending: (err, attempt) => {
        const cause = innermostMessage(err);
        const waitS = backoffMs(attempt, MAX_UNLOCK_WAIT_MS) / 1000;
        setCurrentDetails(
          `Cannot release its Node Lock yet (try ${attempt}, again in ${waitS}s): ${cause}. ` +
            `Until it is released, the Node refuses updates and deletion.`,
        );
        log.warn('cannot release its Node Lock yet', { attempt, cause });
      },
    },
  );
  if (getCurrentDetails() !== details) setCurrentDetails(details); // what the family said before
}
