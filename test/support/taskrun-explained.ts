// A wait for a TaskRun's Secret that, when it times out, says what the TaskRun's workflow was
// doing: its last steps (hostflow describe's timeline) and what it waits for. A flake that only
// shows up in a whole-suite run then tells, in the test's own failure, where the build stood.
import { timeline } from '../../cli/timeline.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import type { TestScope } from './scope.js';

const LAST_STEPS = 12;

export async function waitForSecretExplained(
  scope: TestScope,
  taskRun: { name: string; uid: string },
  timeoutMs: number,
  /** More to tell on a time-out, e.g. what the test's stand-ins saw go wrong. */
  also: () => string[] = () => [],
): Promise<Record<string, string>> {
  try {
    return await scope.taskRuns.waitForSecret(taskRun.name, timeoutMs);
  } catch (err) {
    const why = await explain(scope, taskRun).catch(
      (e: unknown) => `  (could not be explained: ${e instanceof Error ? e.message : String(e)})`,
    );
    const more = also().map((line) => `  ${line}`);
    throw new Error([(err as Error).message, why, ...more].join('\n'), { cause: err });
  }
}

async function explain(scope: TestScope, taskRun: { name: string; uid: string }): Promise<string> {
  const handle = scope.temporal.client.workflow.getHandle(
    WORKFLOW_ID.taskRun(scope.namespace, taskRun.name, taskRun.uid),
  );
  const [description, history] = await Promise.all([handle.describe(), handle.fetchHistory()]);
  const lines = [`workflow ${handle.workflowId}: ${description.status.name}`];
  for (const a of description.raw.pendingActivities ?? []) {
    lines.push(
      `  pending ${a.activityType?.name}: attempt ${a.attempt}` +
        (a.lastFailure?.message ? `, last failure: ${a.lastFailure.message}` : ''),
    );
  }
  for (const step of timeline(history).slice(-LAST_STEPS)) {
    lines.push(
      `  ${step.at} ${step.kind} ${step.name ?? ''}: ${step.text}` +
        (step.outcome
          ? ` [${step.outcome}${step.attempts ? `, ${step.attempts} attempts` : ''}]`
          : '') +
        (step.error ? ` error: ${step.error}` : ''),
    );
  }
  return lines.join('\n');
}
