// Who holds the allocator's slots, when the allocator cannot simply remember it: an allocator
// that starts without state (the previous one was terminated or failed) rebuilds its holders
// from the running TaskRun workflows of its platform before it grants anything, and asks the
// ones that were waiting to ask again; and a holder whose run ended without giving its slot
// back (terminated by hand) is found and freed within the sweep period.
import { getExternalWorkflowHandle, patched, sleep, workflowInfo } from '@temporalio/workflow';
import { askForSlotAgain } from '../../shared/contracts/allocator.js';
import {
  VM_SLOTS_HOST,
  rebuiltHolder,
  runIdOfRequest,
  workflowIdOfRequest,
} from '../../shared/slot-requests.js';
import { temporalApi } from './activity-proxies.js';
import { release, type AllocationState } from './allocation.js';

/** How long a rebuild lets visibility catch up before it trusts what it sees. */
const VISIBILITY_SETTLE_MS = 3_000;
/**
 * v3: a platform's first allocator (its workflow id never ran before) grants at once: nothing
 * can hold a slot yet. Before, a first burst waited out VISIBILITY_SETTLE_MS whenever TaskRuns
 * that had not sent their request yet were already visible.
 */
export const PATCH_FIRST_RUN_REBUILDS_NOTHING = 'allocator-first-run-rebuilds-nothing';
/** Phases in which a TaskRun has asked for a slot but holds none. */
const NOT_HOLDING = ['Allocating', 'Waiting', 'Done'];

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
  if (patched(PATCH_FIRST_RUN_REBUILDS_NOTHING)) {
    const { workflowId, runId } = workflowInfo();
    if (!(await temporalApi.hadEarlierRun({ workflowId, runId }))) return;
  }
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
  await Promise.all(
    waiting.map(
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
