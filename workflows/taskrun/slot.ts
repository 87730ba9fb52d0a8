// A TaskRun's slot from its platform's allocator, through the kit (kit/allocator-slot.ts): how
// its requests are named, and how it says it waits in line (label, Event, details).
import { setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { LABELS, platformLabel } from '../../platform-config/contract.js';
import { slotRequestId } from '../../shared/slot-requests.js';
import { giveSlotBack, requestSlot, type SlotAnswer } from '../kit/allocator-slot.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import type { TaskRun } from './types.js';

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

export async function takeSlot(run: TaskRun, wanted: SlotWanted): Promise<SlotAnswer> {
  const { input, pool } = run;
  const { workflowId, runId } = workflowInfo();
  pool.requestId = slotRequestId(workflowId, pool.attempt, runId);
  return requestSlot({
    platform: input.platform,
    request: {
      requestId: pool.requestId,
      workflowId,
      excluded: wanted.excluded ?? [],
      ...(wanted.adopt ? { adopt: wanted.adopt } : {}),
    },
    summary: wanted.summary,
    mail: pool,
    ended: run.ended,
    // Said once: asking a rebuilt allocator again keeps the TaskRun's place in words.
    inLine: (position, first) => (first ? sayWaiting(run, wanted, position) : undefined),
  });
}

async function sayWaiting(run: TaskRun, wanted: SlotWanted, position: number): Promise<void> {
  const { input } = run;
  run.publish('Waiting');
  setCurrentDetails(
    `TaskRun ${input.namespace}/${input.name} is waiting for ${wanted.waitingFor} ` +
      `(position ${position} in line).`,
  );
  await Promise.all([
    taskRunKube(run).patchMetadata({
      labels: { ...wanted.labels, [LABELS.waitingForPlatform]: platformLabel(input.platform) },
    }),
    note(
      run,
      'Normal',
      'WaitingForHost',
      `Waiting for ${wanted.waitingFor}: ${position - 1} TaskRun(s) ahead`,
      wanted.eventKey,
    ),
  ]);
}

/** Gives back the slot this run holds, if any, and forgets it (no allocator: no slot held). */
export async function giveBackSlot(run: TaskRun): Promise<void> {
  const { input, pool } = run;
  if (!pool.requestId) return;
  const requestId = pool.requestId;
  pool.requestId = undefined;
  await giveSlotBack(input.platform, requestId);
}
