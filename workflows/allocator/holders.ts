// Who holds the allocator's slots, when the allocator cannot simply remember it: an allocator
// that starts without state (the previous one was terminated or failed) begins from the slots
// its last run kept in its memo before answering anyone, or, after a run of an older build that
// kept none, rebuilds its holders from the running TaskRun workflows of its platform; either way
// before it grants anything, and it asks the ones that were waiting to ask again. A holder whose
// run ended without giving its slot back (terminated by hand) is found and freed within the sweep
// period.
import { getExternalWorkflowHandle, sleep, upsertMemo, workflowInfo } from '@temporalio/workflow';
import {
  SLOTS_MEMO,
  askForSlotAgain,
  type SlotsSnapshot,
} from '../../shared/contracts/allocator.js';
import {
  VM_SLOTS_HOST,
  rebuiltHolder,
  runIdOfRequest,
  workflowIdOfRequest,
} from '../../shared/slot-requests.js';
import { temporalApi } from './activity-proxies.js';
import { release, type AllocationState } from './allocation.js';

/** How long a rebuild from visibility (after a run that kept no slots) lets it catch up. */
const VISIBILITY_SETTLE_MS = 3_000;
/** Phases in which a TaskRun has asked for a slot but holds none. */
const NOT_HOLDING = ['Allocating', 'Waiting', 'Done'];

/** The run's slots in its memo, written again only when they changed. */
export class SlotsMemo {
  private written: string | undefined;

  /** Call before any answer that changes the slots goes out: both land in one workflow task. */
  keep(state: AllocationState): void {
    const snapshot: SlotsSnapshot = {
      holders: state.holders,
      waiting: state.queue.map((waiter) => waiter.requestId),
    };
    const key = JSON.stringify(snapshot);
    if (key === this.written) return;
    upsertMemo({ [SLOTS_MEMO]: JSON.parse(key) as SlotsSnapshot }); // a copy: the state moves on
    this.written = key;
  }
}

/**
 * A run that starts without state begins from the slots the last run kept: `false` when that run
 * kept none (it ran an older build), and the holders are to be rebuilt from visibility instead.
 * Releases that reached this run before it knew the holders are applied; holders whose runs
 * ended meanwhile are freed; the waiters, whose requests died with the old run, ask again.
 */
export async function resumeSlots(
  state: AllocationState,
  releasedBefore: string[],
): Promise<boolean> {
  const { workflowId, runId } = workflowInfo();
  const last = await temporalApi.lastSlots({ workflowId, runId });
  if (!last.earlierRun) return true; // the platform's first allocator: no one holds a slot
  if (!last.slots) return false;
  for (const [host, ids] of Object.entries(last.slots.holders)) {
    const held = state.holders[host] ?? [];
    state.holders[host] = [...held, ...ids.filter((id) => !held.includes(id))];
  }
  for (const requestId of releasedBefore) release(state, requestId);
  await releaseClosedHolders(state);
  await askAgain(
    last.slots.waiting.map((requestId) => ({
      workflowId: workflowIdOfRequest(requestId),
      runId: runIdOfRequest(requestId),
    })),
  );
  return true;
}

/**
 * Rebuilds the holders of a platform whose allocator starts without state. A dynamic platform's
 * holders all hold its VM slots; a host platform's hold the host they were granted.
 */
export async function rebuildHolders(
  platform: string,
  state: AllocationState,
  dynamic: boolean,
  /** Workflows whose request is waiting for this rebuild: they hold nothing yet. */
  requesting: string[],
): Promise<void> {
  const { workflowId, runId } = workflowInfo();
  if (!(await temporalApi.hadEarlierRun({ workflowId, runId }))) return;
  let found = await temporalApi.platformTaskRuns({ platform });
  // Only the builds asking right now (a platform's first burst): nothing to rebuild, no wait.
  if (found.every((taskRun) => requesting.includes(taskRun.workflowId))) return;
  // A slot granted just before the old allocator was lost may not be visible yet.
  await sleep(VISIBILITY_SETTLE_MS);
  found = await temporalApi.platformTaskRuns({ platform });
  const waiting: Array<{ workflowId: string; runId: string }> = [];
  for (const taskRun of found) {
    if (taskRun.phase === 'Waiting') waiting.push(taskRun);
    if (NOT_HOLDING.includes(taskRun.phase ?? 'Allocating')) continue;
    const host = dynamic ? VM_SLOTS_HOST : taskRun.host;
    if (!host) continue;
    const holder = rebuiltHolder(taskRun.workflowId, taskRun.runId);
    if (!(state.holders[host] ?? []).includes(holder)) {
      state.holders[host] = [...(state.holders[host] ?? []), holder];
    }
  }
  // Their requests died with the old allocator: the same request ids ask this one again.
  await askAgain(waiting);
}

/** Waiters whose requests died with the old allocator ask this one again, by the same ids. */
async function askAgain(waiters: Array<{ workflowId: string; runId?: string }>): Promise<void> {
  await Promise.all(
    waiters.map(
      ({ workflowId, runId }) =>
        getExternalWorkflowHandle(workflowId, runId)
          .signal(askForSlotAgain)
          .catch(() => undefined), // it ended meanwhile
    ),
  );
}

/**
 * A holder whose run was terminated never releases: find those and free their slots. Holders of
 * the older form name no run, so their workflow id is checked instead.
 */
export async function releaseClosedHolders(state: AllocationState): Promise<void> {
  const holders = Object.values(state.holders).flat();
  if (holders.length === 0) return;
  const key = (id: string) => {
    const runId = runIdOfRequest(id);
    return runId ? `${workflowIdOfRequest(id)}#${runId}` : workflowIdOfRequest(id);
  };
  const closed = await temporalApi.closedWorkflows({
    executions: holders.map((id) => ({
      workflowId: workflowIdOfRequest(id),
      ...(runIdOfRequest(id) ? { runId: runIdOfRequest(id) } : {}),
    })),
  });
  for (const requestId of holders) {
    if (closed.includes(key(requestId))) release(state, requestId);
  }
}
