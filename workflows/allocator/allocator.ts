// The allocator: one entity workflow per platform (`allocator/<platform>`) that owns the
// platform's host slots. Requests are served one at a time, in order, so slots are never
// over-committed; its state survives crashes and continues-as-new as plain JSON.
import {
  condition,
  continueAsNew,
  allHandlersFinished,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { SshActivities } from '../../activities/ssh/build-users.js';
import {
  applyHosts,
  emptyState,
  hostsDueForProbe,
  nextWakeUp,
  recordFailure,
  recordProbe,
  recordSuccess,
  release,
  request,
  serveQueue,
  summary,
  type AllocationState,
} from './allocation.js';
import {
  allocatorState,
  hostConfigChanged,
  hostOutcome,
  releaseSlot,
  requestSlot,
  slotExhausted,
  slotGranted,
} from '../../shared/messages.js';
import type { AllocatorInput } from '../../shared/types.js';
import { kube, temporal } from '../activities.js';
import { PoolScaler, type PoolCarry } from './pool-scaler.js';
import { metrics } from '../metrics.js';

const ssh = proxyActivities<SshActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 }, // a probe's failure is an answer, not something to retry
});

/** Safety net beside the bridge's push: reload config and check holders are alive. */
const RESYNC_MS = 5 * 60_000;
const MAX_HISTORY = 5_000;
/** v2: a dynamic-pool platform's allocator runs its VMs (workflows/allocator/pool-scaler.ts). */
export const PATCH_CLOUD_POOLS = 'allocator-cloud-pools';
/** How long continue-as-new waits for a pool's cloud calls; unfinished ones are issued again. */
const POOL_CALLS_DRAIN = '2 minutes';

/** `<taskrun workflow id>#<attempt>` → the workflow to answer. */
export const workflowIdOfRequest = (requestId: string): string =>
  requestId.slice(0, requestId.lastIndexOf('#'));

export async function allocatorWorkflow(input: AllocatorInput): Promise<void> {
  const { platform } = input;
  const state: AllocationState = (input.state as AllocationState | undefined) ?? emptyState();
  let loaded = false;
  let dirty = true;
  let reloadRequested = true;
  let probesInFlight = 0;
  let lastResync = Date.now();
  const pools = new PoolScaler(platform, state, input.pool as PoolCarry | undefined, () => {
    dirty = true;
  });

  setHandler(
    requestSlot,
    async ({ requestId, excluded }) => {
      await condition(() => loaded); // the first request may arrive with the start itself
      const outcome = request(
        state,
        { requestId, excluded, requestedAt: Date.now() },
        Math.random,
        Date.now(),
      );
      dirty = true;
      return outcome;
    },
    {
      validator: ({ requestId, workflowId, excluded }) => {
        if (
          !requestId ||
          workflowIdOfRequest(requestId) !== workflowId ||
          !Array.isArray(excluded)
        ) {
          throw new Error(
            'requestSlot needs requestId "<workflowId>#<attempt>", its workflowId, and excluded hosts',
          );
        }
      },
    },
  );
  setHandler(releaseSlot, ({ requestId }) => {
    release(state, requestId);
    dirty = true;
  });
  setHandler(hostOutcome, ({ host, ok }) => {
    if (ok) recordSuccess(state, host);
    else recordFailure(state, host, Date.now());
    dirty = true;
  });
  setHandler(hostConfigChanged, () => {
    reloadRequested = true;
    dirty = true;
  });
  setHandler(allocatorState, () => summary(state, Date.now()));

  for (;;) {
    if (reloadRequested || Date.now() - lastResync >= RESYNC_MS) {
      const periodic = !reloadRequested;
      reloadRequested = false;
      const hosts = await kube.loadPlatformHosts({ platform });
      if (patched(PATCH_CLOUD_POOLS)) await pools.reload();
      if (!pools.active) applyHosts(state, hosts);
      loaded = true;
      if (periodic) await releaseClosedHolders(state);
      lastResync = Date.now();
    }
    await answerWaiters(state, pools.step(Date.now()));
    for (const host of hostsDueForProbe(state, Date.now())) {
      probesInFlight++;
      void ssh
        .probeHost({ host: state.hosts[host]! })
        .then(
          (result) => recordProbe(state, host, result.ok, Date.now()),
          () => recordProbe(state, host, false, Date.now()),
        )
        .finally(() => {
          probesInFlight--;
          dirty = true;
        });
    }
    report(platform, state, pools.describe());
    dirty = false;

    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY) {
      const drained = () => allHandlersFinished() && probesInFlight === 0;
      if (pools.active) await condition(() => drained() && pools.inFlight === 0, POOL_CALLS_DRAIN);
      else await condition(drained);
      await continueAsNew<typeof allocatorWorkflow>({ platform, state, pool: pools.saved() });
    }
    const now = Date.now();
    const wake =
      Math.min(
        nextWakeUp(state, now) ?? Infinity,
        pools.wakeUp() ?? Infinity,
        lastResync + RESYNC_MS,
      ) - now;
    await condition(() => dirty || reloadRequested, Math.max(1, wake));
  }
}

/** Grants (and refusals) for queued requests go back to their TaskRun workflows by signal. */
async function answerWaiters(
  state: AllocationState,
  turnedAway: Array<{ requestId: string; reason: string }>,
): Promise<void> {
  const { grants, exhausted: unservable } = serveQueue(state, Math.random, Date.now());
  const exhausted = [...turnedAway, ...unservable];
  await Promise.all([
    ...grants.map(async ({ requestId, host }) => {
      try {
        await getExternalWorkflowHandle(workflowIdOfRequest(requestId)).signal(slotGranted, {
          requestId,
          host,
        });
      } catch {
        release(state, requestId); // its TaskRun workflow is gone: the slot is free again
      }
    }),
    ...exhausted.map(async ({ requestId, reason }) => {
      await getExternalWorkflowHandle(workflowIdOfRequest(requestId))
        .signal(slotExhausted, { requestId, reason })
        .catch(() => undefined);
    }),
  ]);
}

/** A holder whose workflow was terminated never releases: find those and free their slots. */
async function releaseClosedHolders(state: AllocationState): Promise<void> {
  const holders = Object.values(state.holders).flat();
  if (holders.length === 0) return;
  const closed = await temporal.closedWorkflows({ workflowIds: holders.map(workflowIdOfRequest) });
  for (const requestId of holders) {
    if (closed.includes(workflowIdOfRequest(requestId))) release(state, requestId);
  }
}

function report(platform: string, state: AllocationState, poolVms: string): void {
  const view = summary(state, Date.now());
  const tags = { platform };
  metrics.slotsInUse.set(view.inUse, tags);
  metrics.slotsTotal.set(view.capacity, tags);
  metrics.queueLength.set(view.queue.length, tags);
  const hosts = view.hosts
    .map(
      (h) =>
        `${h.name} ${h.inUse}/${h.capacity}${h.health === 'healthy' ? '' : ` (${h.health})`}${h.removed ? ' (removed)' : ''}`,
    )
    .join(', ');
  setCurrentDetails(
    `**${platform}**: ${view.inUse}/${view.capacity} slots in use; ` +
      `${view.queue.length} waiting${view.queue.length ? `: ${view.queue.slice(0, 5).join(', ')}` : ''}.\n\n` +
      `Hosts: ${hosts || 'none configured'}` +
      (poolVms ? `\n\nPool VMs: ${poolVms}` : ''),
  );
}
