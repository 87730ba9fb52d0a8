// Answering the build when it cannot be served: its Secret carries an `error` it can print, so
// the pod never hangs (docs/architecture.md, "The TaskRun contract"). Where not even that Secret can be written, the
// TaskRun gets a Warning Event saying why.
import { workflowInfo } from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import type { TaskRunOutcome } from '../../shared/contracts/taskrun.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import type { TaskRun } from './types.js';

/** The build's Secret gets `error: message`; the TaskRun its labels. */
export async function answerWithError(
  run: TaskRun,
  message: string,
  labels: Record<string, string | null>,
): Promise<TaskRunOutcome> {
  run.status.error = message;
  const k8s = taskRunKube(run);
  await Promise.all([k8s.writeSecret({ error: message }), k8s.patchMetadata({ labels })]);
  run.publish('Failed');
  return { served: 'error', message };
}

/**
 * The last resort for a failure nothing else handled: the build still gets an error Secret that
 * names the cause and the workflow to look at; if even that fails, a Warning Event.
 */
export async function answerUnexpected(run: TaskRun, err: unknown): Promise<TaskRunOutcome> {
  const { workflowId } = workflowInfo();
  const message =
    `hostflow could not serve this TaskRun: ${innermostMessage(err)}. Retry the build; if it ` +
    `keeps failing, give the platform operators the workflow ID ${workflowId}.`;
  try {
    return await answerWithError(run, message, {});
  } catch (writeErr) {
    return warnUnanswerable(
      run,
      `${message} (the error Secret could not be written either: ${innermostMessage(writeErr)})`,
    );
  }
}

/** No Secret can be written for this TaskRun: say why on the TaskRun itself, and stop. */
export async function warnUnanswerable(run: TaskRun, reason: string): Promise<TaskRunOutcome> {
  run.status.error = reason;
  await note(run, 'Warning', 'CannotServe', reason, 'cannot-serve');
  run.publish('Failed');
  return { served: 'nothing', reason };
}
