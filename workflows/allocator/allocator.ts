// The allocator: one entity workflow per platform (`allocator/<platform>`) that owns the
// platform's host slots. Requests are served one at a time, in order, so slots are never
// over-committed; its state survives crashes and continues-as-new as plain JSON. It never fails
// on a failing dependency: it keeps serving with what it last read and says what it waits for.
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import {
  allocatorState,
  hostConfigChanged,
  hostOutcome,
  releaseSlot,
  requestSlot,
  slotExhausted,
  slotGranted,
  type AllocatorInput,
} from '../../shared/contracts/allocator.js';
import {
  VM_SLOTS_HOST,
  rebuiltHolder,
  runIdOfRequest,
  workflowIdOfRequest,
} from '../../shared/slot-requests.js';
import { hostConfigApi, hostProbe } from './activity-proxies.js';
import { metrics } from '../metrics.js';
import { backoffMs } from '../kit/retry.js';
import {
  applyHosts,
  emptyState,
  exhaustQueue,
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
import { DependencyLocks } from './dependency-locks.js';
import { releaseLocks } from '../../locks/hold.js';
import { handleDrains } from './drain.js';
import { SlotsMemo, rebuildHolders, releaseClosedHolders, resumeSlots } from './holders.js';
import { PoolScaler, type PoolCarry } from './pool-scaler.js';
import { report, type ConfigTrouble } from './report.js';
import { MAX_HISTORY } from '../history-limit.js';
import { continueAsNewOnCurrentBuild, newBuildCurrent } from '../kit/new-build.js';

/** Safety net beside the bridge's push: reload config. */
const RESYNC_MS = 5 * 60_000;
/** How continue-as-new waits for a pool's cloud calls; unfinished ones are issued again. */
const POOL_CALLS_DRAIN = '2 minutes';

export async function allocatorWorkflow(input: AllocatorInput): Promise<void> {
  const { platform } = input;
  const fresh = input.state === undefined;
  const state: AllocationState = (input.state as AllocationState | undefined) ?? emptyState();
  const slotsMemo = new SlotsMemo();
  /** Whether this run knows its slots: carried across continue-as-new, or resumed once. */
  let slotsKnown = !fresh;
  /** Releases that came before the slots were known (a run that starts without state). */
  const releasedBefore: string[] = [];
  if (slotsKnown) slotsMemo.keep(state);
  const sweepMs = (input.sweepSeconds ?? RESYNC_MS / 1000) * 1000;
  let loaded = false;
  let holdersRebuilt = !fresh;
  let dirty = true;
  let reloadRequested = true; // a new run always reads the config: no change is lost across runs
  let probesInFlight = 0;
  let lastResync = Date.now();
  let lastSweep = input.lastSweep ?? Date.now();
  let trouble: ConfigTrouble | undefined;
  let turnedAway: Array<{ requestId: string; reason: string }> = [];
  /**
   * Answers the requestSlot handler holds back for the loop (grants and places in line), and how
   * many of them the loop's last pass covers.
   */
  let grantsMade = 0;
  let grantsLocked = 0;
  const dependencyLocks = new DependencyLocks(platform);
  /** Before any grant goes out, what granted builds are about to use is locked. */
  const syncLocks = async (): Promise<void> => {
    // Not before the holders and VMs are known: an empty state would release what is in use.
    if (!loaded || !holdersRebuilt) return;
    await dependencyLocks.sync(state, pools.mayHaveVms);
  };
  /** Workflows whose requests wait for the first read of the config (and any rebuild). */
  const requesting = new Set<string>();
  const pools = new PoolScaler(
    platform,
    {
      view: state,
      turnAway: (reason) => turnedAway.push(...exhaustQueue(state, reason)),
      addHolders: (holders) => {
        for (const { workflowId, host } of holders) {
          const held = state.holders[host] ?? [];
          if (held.some((id) => workflowIdOfRequest(id) === workflowId)) continue; // known
          state.holders[host] = [...held, rebuiltHolder(workflowId)];
        }
      },
      wake: () => {
        dirty = true;
      },
    },
    input.pool as PoolCarry | undefined,
  );

  setHandler(
    requestSlot,
    async ({ requestId, workflowId, excluded, adopt, serves }) => {
      if (!loaded) {
        requesting.add(workflowId);
        await condition(() => loaded); // the first request may arrive with the start itself
        requesting.delete(workflowId);
      }
      const outcome = request(
        state,
        {
          requestId,
          excluded,
          requestedAt: Date.now(),
          ...(adopt ? { adopt } : {}),
          ...(serves === 'machines' ? { serves } : {}),
        },
        Math.random,
        Date.now(),
      );
      dirty = true;
      // What the build is about to use is locked before it hears it may go, and every answer is
      // in the memo before it goes out.
      if (outcome.status === 'granted' || outcome.status === 'queued') {
        const answer = ++grantsMade;
        await condition(() => grantsLocked >= answer);
      }
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
            'requestSlot needs requestId "<workflowId>#<run id>.<attempt>", its workflowId, and excluded hosts',
          );
        }
      },
    },
  );
  setHandler(releaseSlot, ({ requestId }) => {
    if (!slotsKnown) releasedBefore.push(requestId);
    release(state, requestId);
    dirty = true;
  });
  setHandler(hostOutcome, ({ host, ok }) => {
    if (ok) {
      recordSuccess(state, host);
      pools.served(host);
    } else recordFailure(state, host, Date.now());
    dirty = true;
  });
  setHandler(hostConfigChanged, () => {
    reloadRequested = true;
    dirty = true;
    if (trouble) trouble.retryAt = 0; // the fix may be this very change: read it now
  });
  setHandler(allocatorState, () => summary(state, Date.now()));
  handleDrains({
    platform,
    state,
    loaded: () => loaded,
    cloudVms: () => pools.active,
    changed: () => {
      dirty = true;
    },
  });

  try {
    for (;;) {
      // Changes made while this pass awaits (handlers run then) call for another pass.
      dirty = false;
      const reloadDue = reloadRequested || Date.now() - lastResync >= RESYNC_MS;
      if (reloadDue && (!trouble || Date.now() >= trouble.retryAt)) {
        reloadRequested = false;
        try {
          const hosts = await hostConfigApi.loadPlatformHosts({ platform });
          await pools.reload();
          state.elastic = pools.configured;
          if (!pools.active) applyHosts(state, hosts);
          if (!holdersRebuilt) {
            holdersRebuilt = true;
            const dynamic = hosts.length === 1 && hosts[0]!.name === VM_SLOTS_HOST;
            if (await resumeSlots(state, releasedBefore)) {
              pools.holdersKnown();
            } else {
              // The last run ran an older build and kept no slots in its memo: its holders are
              // found from visibility instead.
              await rebuildHolders(platform, state, dynamic, [...requesting]);
            }
            slotsKnown = true;
          }
          loaded = true;
          trouble = undefined;
          dependencyLocks.stale();
          lastResync = Date.now();
        } catch (err) {
          // A failing read (the API server down, a revoked permission) never ends the allocator:
          // it serves with the hosts it last read and tries again with back-off, saying why.
          if (isCancellation(err)) throw err;
          reloadRequested = true;
          const attempt = (trouble?.attempt ?? 0) + 1;
          trouble = {
            attempt,
            cause: innermostMessage(err),
            retryAt: Date.now() + backoffMs(attempt),
          };
          metrics.waits.add(1, { platform, dependency: 'kubernetes' });
        }
      }
      if (loaded && Date.now() - lastSweep >= sweepMs) {
        await releaseClosedHolders(state);
        lastSweep = Date.now();
      }
      const step = pools.step(Date.now());
      if (step) applyHosts(state, step.hosts);
      const away = turnedAway;
      turnedAway = [];
      await answerWaiters(state, away, async () => {
        const covered = grantsMade;
        await syncLocks();
        if (slotsKnown) slotsMemo.keep(state);
        grantsLocked = covered;
      });
      for (const host of hostsDueForProbe(state, Date.now())) {
        probesInFlight++;
        void hostProbe
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
      report(platform, state, pools.describe(), trouble, dependencyLocks.describe());

      if (
        workflowInfo().continueAsNewSuggested ||
        workflowInfo().historyLength > MAX_HISTORY.allocator ||
        newBuildCurrent()
      ) {
        // A grant that came in since this pass's lock sync waits for the next pass, not for this.
        const grantWaits = () => grantsMade > grantsLocked;
        const drained = () => allHandlersFinished() && probesInFlight === 0;
        if (pools.active)
          await condition(
            () => (drained() && pools.inFlight === 0) || grantWaits(),
            POOL_CALLS_DRAIN,
          );
        else await condition(() => drained() || grantWaits());
        if (grantWaits()) continue;
        await continueAsNewOnCurrentBuild<typeof allocatorWorkflow>({
          platform,
          state,
          pool: pools.saved(),
          lastSweep,
          sweepSeconds: sweepMs / 1000,
        });
      }
      const now = Date.now();
      const wake =
        Math.min(
          nextWakeUp(state, now) ?? Infinity,
          pools.wakeUp() ?? Infinity,
          lastResync + RESYNC_MS,
          lastSweep + sweepMs,
          trouble ? trouble.retryAt : Infinity,
          dependencyLocks.wakeUp() ?? Infinity,
        ) - now;
      // While reads fail, the next one waits for its back-off (trouble.retryAt), not for a signal.
      // A new current build (workflows/kit/new-build.ts) is moved to at once.
      await condition(
        () => dirty || (reloadRequested && !trouble) || newBuildCurrent(),
        Math.max(1, wake),
      );
    }
  } catch (err) {
    // Cancelled by an operator: what it locked is let go on the way out, whatever else happens.
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(
        () => releaseLocks({ waitsOut: () => false }).catch(() => false), // else GC does it
      );
    }
    throw err;
  }
}

/** Grants (and refusals) for queued requests go back to their TaskRun workflows by signal. */
async function answerWaiters(
  state: AllocationState,
  turnedAway: Array<{ requestId: string; reason: string }>,
  beforeAnswers: () => Promise<void>,
): Promise<void> {
  const { grants, exhausted: unservable } = serveQueue(state, Math.random, Date.now());
  await beforeAnswers();
  const exhausted = [...turnedAway, ...unservable];
  const runOf = (requestId: string) =>
    getExternalWorkflowHandle(workflowIdOfRequest(requestId), runIdOfRequest(requestId));
  await Promise.all([
    ...grants.map(async ({ requestId, host }) => {
      try {
        await runOf(requestId).signal(slotGranted, { requestId, host });
      } catch {
        release(state, requestId); // its TaskRun's run is gone: the slot is free again
      }
    }),
    ...exhausted.map(async ({ requestId, reason }) => {
      await runOf(requestId)
        .signal(slotExhausted, { requestId, reason })
        .catch(() => undefined);
    }),
  ]);
}
