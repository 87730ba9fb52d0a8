// What a TaskRun workflow tells people besides its Secret: Kubernetes Events (best-effort) and
// the message of the failure that actually happened on a host or in a cloud.
import { events } from '../activities.js';
import type { TaskRun } from './types.js';

/** Records an Event on the TaskRun; `key` tells repeats of one reason apart. Never fails the flow. */
export async function note(
  run: TaskRun,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
  key: string,
): Promise<void> {
  try {
    await events.recordTaskRunEvent({ ...run.ref, type, reason, message, key });
  } catch {
    // Events are best-effort; the flow does not wait on them.
  }
}

/** The innermost failure's message: what actually went wrong, not the activity wrapper. */
export function innermostMessage(err: unknown): string {
  let current = err as { message?: string; cause?: unknown } | undefined;
  while (current?.cause) current = current.cause as typeof current;
  return current?.message ?? String(err);
}
