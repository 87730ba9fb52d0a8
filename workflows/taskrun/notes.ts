// Kubernetes Events on the TaskRun: what people see in `kubectl describe`. Best-effort.
import { eventApi } from './activity-proxies.js';
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
    await eventApi.recordTaskRunEvent({ ...run.ref, type, reason, message, key });
  } catch {
    // Events are best-effort; the flow does not wait on them.
  }
}
