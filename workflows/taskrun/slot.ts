// Taking a slot from the platform's allocator (`allocator/<platform>`): ask, and when every slot
// is taken, wait in line (label, Event, details) until the allocator grants one, says none will
// ever come, or the TaskRun ends. An allocator that was lost and rebuilt itself asks its waiters
// to ask again, so nobody waits on an allocator that no longer exists.
import {
  condition,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import { LABELS, platformLabel } from '../../platform-config/contract.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { releaseSlot } from '../../shared/messages.js';
import { slotRequestId } from '../../shared/slot-requests.js';
import type { Host } from '../../shared/types.js';
import { allocator } from '../activities.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import type { TaskRun } from './types.js';

/** v2: request ids carry the run id, so the allocator tells this run from an earlier one. */
export const PATCH_RUN_SCOPED_REQUESTS = 'taskrun-run-scoped-slot-requests';
/** v2: a waiter asks again when its allocator says it was rebuilt. */
export const PATCH_ASK_AGAIN = 'taskrun-ask-rebuilt-allocator-again';

export type SlotAnswer =
  | { granted: Host }
  | { exhausted: string }
  /** The TaskRun ended while it waited. */
  | { ended: true };

export interface SlotWanted {
  /** The activity's summary in the UI. */
  summary: string;
  /** What the TaskRun waits for, in words ("a linux/arm64 host"). */
  waitingFor: string;
  /** The Event's key, telling repeats apart. */
  eventKey: string;
  /** The label the TaskRun carries while it waits, with its other labels. */
  labels: Record<string, string>;
  excluded?: string[];
  /** A host an earlier run served this build on (see SlotRequestInput.adopt). */
  adopt?: string;
}

/** Decides, once per run, how this run names its requests (see PATCH_RUN_SCOPED_REQUESTS). */
export function chooseRequestIds(run: TaskRun): void {
  run.pool.runScoped = patched(PATCH_RUN_SCOPED_REQUESTS);
}

export async function takeSlot(run: TaskRun, wanted: SlotWanted): Promise<SlotAnswer> {
  const { input, pool } = run;
  const { workflowId, runId } = workflowInfo();
  pool.requestId = slotRequestId(workflowId, pool.attempt, pool.runScoped ? runId : undefined);
  pool.grant = pool.exhausted = undefined;
  pool.askAgain = false;
  const ask = () =>
    allocator.requestSlot.executeWithOptions({ summary: wanted.summary }, [
      {
        platform: input.platform,
        requestId: pool.requestId!,
        workflowId,
        excluded: wanted.excluded ?? [],
        ...(wanted.adopt ? { adopt: wanted.adopt } : {}),
      },
    ]);
  let answer = await ask();
  if (answer.status === 'granted') return { granted: answer.host };
  if (answer.status === 'exhausted') return { exhausted: answer.reason };

  run.publish('Waiting');
  setCurrentDetails(
    `TaskRun ${input.namespace}/${input.name} is waiting for ${wanted.waitingFor} ` +
      `(position ${answer.position} in line).`,
  );
  await Promise.all([
    taskRunKube(run).patchMetadata({
      labels: { ...wanted.labels, [LABELS.waitingForPlatform]: platformLabel(input.platform) },
    }),
    note(
      run,
      'Normal',
      'WaitingForHost',
      `Waiting for ${wanted.waitingFor}: ${answer.position - 1} TaskRun(s) ahead`,
      wanted.eventKey,
    ),
  ]);
  for (;;) {
    await condition(
      () =>
        pool.grant !== undefined ||
        pool.exhausted !== undefined ||
        run.ended() ||
        pool.askAgain === true,
    );
    if (pool.grant) return { granted: pool.grant };
    if (pool.exhausted !== undefined) return { exhausted: pool.exhausted };
    if (run.ended()) return { ended: true };
    // The allocator was rebuilt and no longer knows this request: the same id asks again.
    pool.askAgain = false;
    if (!patched(PATCH_ASK_AGAIN)) continue;
    answer = await ask();
    if (answer.status === 'granted') return { granted: answer.host };
    if (answer.status === 'exhausted') return { exhausted: answer.reason };
  }
}

/** Gives back the slot this run holds, if any, and forgets it (no allocator: no slot held). */
export async function giveBackSlot(run: TaskRun): Promise<void> {
  const { input, pool } = run;
  if (!pool.requestId) return;
  const requestId = pool.requestId;
  pool.requestId = undefined;
  await getExternalWorkflowHandle(WORKFLOW_ID.allocator(input.platform))
    .signal(releaseSlot, { requestId })
    .catch(() => undefined);
}
