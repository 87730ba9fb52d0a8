// Holding and releasing Locks from a workflow (docs/architecture.md, "The workflow kit"; the
// Lock family in docs/locks.md). Every workflow that locks goes through here: a Machine's or a
// rollout's Node while it drains, a Provisioning's hosts and spec, an allocator's Secrets. The
// holder is always the workflow's id. Taking a Lock never holds the work up (a Lock protects, it
// does not gate); releasing one is waited out, since a Lock left behind refuses its object for
// ever. Each caller keeps its own words for the details and logs, and its own patches.
import {
  getCurrentDetails,
  log,
  proxyLocalActivities,
  setCurrentDetails,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { innermostMessage } from '../shared/failures.js';
import type { LockActivities, LockSync } from './adapter.js';
import { CLUSTER_LOCKS_NAMESPACE, type LockTarget } from './api.js';
import type { PlatformLockActivities, PlatformLockInput } from './platform-secrets.js';
import { backoffMs, failureOf } from '../workflows/kit/retry.js';

/**
 * Short Kubernetes calls, local like the families' (KUBE_CALL, workflows/kit/activity-options.ts)
 * but with fewer tries. A caller that keeps failing goes on without the Lock and tries again later.
 */
const locks = proxyLocalActivities<LockActivities & PlatformLockActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 3,
  },
});

/** The longest wait between two tries to let go of a Node's Lock. */
const MAX_NODE_UNLOCK_WAIT_MS = 30_000;

export interface TakeOptions {
  /** Namespaces beyond the engine's own where this workflow may hold Locks (see syncLocks). */
  alsoIn?: string[];
  /** Told when the Locks cannot be written; the work goes on (unless this throws). */
  onNotLocked: (err: unknown) => void | Promise<void>;
}

/**
 * Makes the Locks this workflow holds exactly `wanted` (releasing the others). Undefined when
 * they could not be written, after `onNotLocked` was told.
 */
export async function takeLocks(
  wanted: LockTarget[],
  options: TakeOptions,
): Promise<LockSync | undefined> {
  const { alsoIn } = options;
  const holder = workflowInfo().workflowId;
  return locks.syncLocks({ holder, wanted, ...(alsoIn ? { alsoIn } : {}) }).catch(async (err) => {
    await options.onNotLocked(err);
    return undefined;
  });
}

/**
 * Locks the Secrets a platform's work in progress needs, as the adapter derives them from
 * host-config (locks/platform-secrets.ts); the allocator waits out a failure on its own clock.
 */
export const takePlatformLocks = (
  input: Omit<PlatformLockInput, 'holder'>,
): Promise<LockSync & { unresolved?: boolean }> =>
  locks.lockPlatformDependencies({ ...input, holder: workflowInfo().workflowId });

export interface ReleaseOptions {
  /** Namespaces beyond the engine's own where this workflow may hold Locks. */
  alsoIn?: string[];
  /**
   * Whether a failed try is waited out and tried again (default: every one). A failure not
   * waited out is thrown: a cancelled run's last try, say, which garbage collection backs up.
   */
  waitsOut?: (err: unknown) => boolean;
  /** The wait between tries doubles from 1 s up to this (default: retry.ts's backoffMs). */
  maxWaitMs?: number;
  /** Told of each failed try it waits after, before the wait. */
  onPending?: (cause: string, attempt: number, waitMs: number) => void;
}

/** Lets go of every Lock this workflow holds, trying until that succeeds. */
export async function releaseLocks(options: ReleaseOptions = {}): Promise<true> {
  const { alsoIn } = options;
  const holder = workflowInfo().workflowId;
  for (let attempt = 1; ; attempt++) {
    const err = await failureOf(() =>
      locks.syncLocks({ holder, wanted: [], ...(alsoIn ? { alsoIn } : {}) }),
    );
    if (err === undefined) return true;
    if (options.waitsOut && !options.waitsOut(err)) throw err;
    const waitMs = backoffMs(attempt, options.maxWaitMs);
    options.onPending?.(innermostMessage(err), attempt, waitMs);
    await sleep(waitMs);
  }
}

/**
 * Locks `node` (namespace cluster-locks, named like the Node) against everyone else's UPDATE and
 * DELETE, saying `reason` to whoever is refused. A Lock that cannot be taken is told to
 * `onNotLocked`, and the work goes on without it.
 */
export async function lockNode(
  node: string,
  reason: string,
  onNotLocked: (cause: string) => Promise<void> = async () => undefined,
): Promise<void> {
  const target: LockTarget = {
    namespace: CLUSTER_LOCKS_NAMESPACE,
    name: node,
    resource: 'nodes',
    apiGroup: '',
    operations: ['UPDATE', 'DELETE'],
    reason,
  };
  await takeLocks([target], { onNotLocked: (err) => onNotLocked(innermostMessage(err)) });
}

/** Lets go of this workflow's Node Locks, trying until that succeeds, saying so in its details. */
export async function unlockNode(): Promise<void> {
  const details = getCurrentDetails();
  await releaseLocks({
    alsoIn: [CLUSTER_LOCKS_NAMESPACE],
    maxWaitMs: MAX_NODE_UNLOCK_WAIT_MS,
    onPending: (cause, attempt, waitMs) => {
      setCurrentDetails(
        `Cannot release its Node Lock yet (try ${attempt}, again in ${waitMs / 1000}s): ${cause}. ` +
          `Until it is released, the Node refuses updates and deletion.`,
      );
      log.warn('cannot release its Node Lock yet', { attempt, cause });
    },
  });
  if (getCurrentDetails() !== details) setCurrentDetails(details); // what the family said before
}
