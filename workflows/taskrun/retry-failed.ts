// A Failed TaskRun that still runs is served again when on-call asks, once the cause is fixed
// (`hostflow retry taskrun`, the `retryTaskRun` update): its error Secret is deleted, what it
// failed on is forgotten (a fixed host may serve it now), and it goes back to asking for a host.
// Only a run waiting for its TaskRun to end after an error answer takes a retry; the validator
// refuses everything else with the reason, so on-call hears it at once and history stays clean.
import { setHandler } from '@temporalio/workflow';
import { ANNOTATIONS } from '../../platform-config/contract.js';
import { retryTaskRun, type TaskRunRetryOutcome } from '../../shared/contracts/taskrun.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import { giveBackSlot } from './slot.js';
import type { TaskRun } from './types.js';

export function handleRetries(run: TaskRun): void {
  setHandler(
    retryTaskRun,
    (): TaskRunRetryOutcome => {
      // Marks histories that may hold retries.
      const retries = (run.retries ??= { count: 0, pending: false });
      retries.count++;
      retries.pending = true;
      return { previousError: run.status.error ?? 'unknown', retry: retries.count };
    },
    {
      validator: () => {
        const refusal = refuse(run);
        if (refusal) throw new Error(refusal);
      },
    },
  );
}

/** Whether a retry was asked for since the last answer. */
export function retryPending(run: TaskRun): boolean {
  return run.retries?.pending === true;
}

/**
 * Undoes the failed answer so serving can start over: the slot it may still hold goes back, the
 * error Secret goes, and its failed and skipped hosts are forgotten (the fix may be on them).
 * Build users it may have left stay listed in `touched`, so clean-up still removes them.
 */
export async function forgetFailure(run: TaskRun): Promise<void> {
  const { status, pool } = run;
  const retries = run.retries!;
  retries.pending = false;
  const previous = status.error ?? 'unknown';
  await giveBackSlot(run);
  status.error = undefined;
  status.host = undefined;
  status.failedHosts = [];
  pool.skipped = [];
  pool.lastError = undefined;
  pool.forbiddenTries = undefined;
  run.publish('Allocating');
  const k8s = taskRunKube(run);
  await Promise.all([
    k8s.deleteSecret(),
    k8s.patchMetadata({ annotations: { [ANNOTATIONS.failedHosts]: null } }),
    note(
      run,
      'Normal',
      'RetryRequested',
      `Serving it again as asked (retry ${retries.count}); it had been answered: ${previous}`,
      `retry-${retries.count}`,
    ),
  ]);
}

function refuse(run: TaskRun): string | undefined {
  const { input, status } = run;
  const label = `TaskRun ${input.namespace}/${input.name}`;
  if (run.ended()) {
    return `${label} has already ${status.observed === 'deleted' ? 'been deleted' : 'completed'}: nothing runs that could use a host`;
  }
  if (run.unanswerable) return `${label} cannot be served at all: ${status.error ?? 'unknown'}`;
  if (run.retries?.pending) return `${label} is being retried already`;
  if (!run.answered || status.phase !== 'Failed') {
    return `nothing to retry: ${label} is not failed, it is ${phaseInWords(run)}`;
  }
  if (run.cloud && !run.cloud.pool) {
    // Its VMs are launched under keys derived from the TaskRun: a retry would get the same ones.
    return `${label} runs on dynamic platform ${input.platform}, whose VMs cannot be launched again for it: re-run the build instead`;
  }
  return undefined;
}

function phaseInWords({ status }: TaskRun): string {
  switch (status.phase) {
    case 'Ready':
      return `served by ${status.host ?? 'its host'}`;
    case 'Waiting':
      return 'waiting for a host';
    case 'Allocating':
    case 'Provisioning':
      return 'being served';
    default:
      return status.phase;
  }
}
