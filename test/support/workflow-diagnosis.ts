// What a test prints when a workflow stops answering or progressing: its pending workflow task
// (its state, attempt and times) and the last workflow-task failures and time-outs in its
// history, so a flake says whether the task sat on a dead worker or failed on a live one.
import type { WorkflowHandle } from '@temporalio/client';
import { tsIso } from '../../cli/timeline.js';

const LAST_TASK_PROBLEMS = 3;
/** temporal.api.enums.v1.PendingWorkflowTaskState */
const TASK_STATES = ['unspecified', 'scheduled', 'started'];

export async function diagnoseWorkflow(handle: WorkflowHandle): Promise<string> {
  const lines = [`workflow ${handle.workflowId}:`];
  try {
    const { raw, status, historyLength } = await handle.describe();
    const task = raw.pendingWorkflowTask;
    lines.push(`  status ${status.name}, ${historyLength} events`);
    lines.push(
      task
        ? `  pending workflow task: ${TASK_STATES[task.state ?? 0] ?? task.state}, attempt ${task.attempt}, ` +
            `scheduled ${stamp(task.scheduledTime)}, started ${stamp(task.startedTime)}`
        : '  no pending workflow task',
    );
    const { events } = await handle.fetchHistory();
    const problems = (events ?? []).flatMap((event) => {
      const failed = event.workflowTaskFailedEventAttributes;
      const timedOut = event.workflowTaskTimedOutEventAttributes;
      if (failed) {
        return [
          `  event ${event.eventId} at ${stamp(event.eventTime)}: workflow task failed ` +
            `(cause ${failed.cause}, by ${failed.identity}): ${failed.failure?.message ?? ''}`,
        ];
      }
      if (timedOut) {
        return [
          `  event ${event.eventId} at ${stamp(event.eventTime)}: workflow task timed out ` +
            `(${timedOut.timeoutType})`,
        ];
      }
      return [];
    });
    lines.push(...(problems.length ? problems.slice(-LAST_TASK_PROBLEMS) : ['  no task failed']));
  } catch (err) {
    lines.push(`  could not be described: ${err instanceof Error ? err.message : String(err)}`);
  }
  return lines.join('\n');
}

const stamp = (time: Parameters<typeof tsIso>[0]): string => tsIso(time) ?? '-';
