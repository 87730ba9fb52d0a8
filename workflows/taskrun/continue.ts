// A TaskRun workflow can wait for a long time: while a dependency it needs to deliver is down, or
// for its build to end. It continues as new before its history reaches Temporal's limit, which
// would otherwise end it with nothing cleaned up, carrying what it holds: the host granted, the
// build users it made, the VMs it launched, its answer and its retries.
import { allHandlersFinished, condition, continueAsNew } from '@temporalio/workflow';
import { historyFull as overLimit } from '../history-limit.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import type { Host } from '../../platform-config/host.js';
import type {
  TaskRunStatus,
  TaskRunOutcome,
  TaskRunWorkflow,
} from '../../shared/contracts/taskrun.js';
import type { PoolRun, TaskRun } from './types.js';

/** Where the next run picks up. */
export type Stage =
  /** Answered (served or failed): waiting for the TaskRun to end, then cleaning up. */
  | { stage: 'answered'; outcome: TaskRunOutcome }
  /** A host was granted and its build user is being delivered; a dependency is waited for. */
  | { stage: 'delivering'; host: Host; labels: Record<string, string> };

export type Carried = Stage & {
  status: TaskRunStatus;
  pool: PoolRun;
  cloud?: CloudPlatform;
  retries?: { count: number; pending: boolean };
};

/** Whether this run's history is long enough to continue as new. Safe in a condition. */
export function historyFull(run: TaskRun): boolean {
  return overLimit(run.input.maxHistory, 'taskRun');
}

/** Ends this run, handing what it holds to the next (the clean-up is the next run's). */
export async function continueTaskRun(run: TaskRun, stage: Stage): Promise<never> {
  await condition(allHandlersFinished);
  run.continuing = true;
  const input = { ...run.input };
  delete input.carried; // the earlier run's: this one's replaces it
  const carried: Carried = {
    ...stage,
    status: run.status,
    pool: run.pool,
    ...(run.cloud ? { cloud: run.cloud } : {}),
    ...(run.retries ? { retries: run.retries } : {}),
  };
  return continueAsNew<TaskRunWorkflow>({ ...input, carried });
}

/**
 * Takes over what the previous run carried (before any signal is handled); returns its stage,
 * for the workflow to pick up from.
 */
export function takeOver(run: TaskRun): Stage | undefined {
  const carried = run.input.carried as Carried | undefined;
  if (!carried) return undefined;
  Object.assign(run.status, carried.status);
  run.pool = carried.pool;
  run.cloud = carried.cloud;
  run.retries = carried.retries;
  return carried.stage === 'answered'
    ? { stage: 'answered', outcome: carried.outcome }
    : { stage: 'delivering', host: carried.host, labels: carried.labels };
}
