// When a long-lived workflow continues as new: before its history reaches Temporal's limit
// (51,200 events), which would end it with nothing cleaned up. The limits of every family that
// continues as new are here; those that take one from their input (a bridge setting, for tests)
// are raised to the smallest allowed.
import { workflowInfo } from '@temporalio/workflow';

/** Events a run's history may reach before it continues as new, unless its input says. */
export const MAX_HISTORY = {
  /** HOSTFLOW_TASKRUN_MAX_HISTORY */
  taskRun: 5_000,
  /** HOSTFLOW_PROVISIONING_MAX_HISTORY; every relist resends each Provisioning. */
  provisioning: 2_000,
  /** The host-config workflow's input may lower it (tests). */
  hostConfig: 2_000,
  allocator: 5_000,
  machine: 2_000,
  rollout: 5_000,
  software: 2_000,
  bpaCluster: 2_000,
} as const;

/** A smaller limit is raised to this: a run must get somewhere before it continues again. */
export const MIN_HISTORY = 10;

/** Whether this run's history is long enough to continue as new. Safe in a condition. */
export function historyFull(limit: number | undefined, family: keyof typeof MAX_HISTORY): boolean {
  const { continueAsNewSuggested, historyLength } = workflowInfo();
  return (
    continueAsNewSuggested || historyLength > Math.max(limit ?? MAX_HISTORY[family], MIN_HISTORY)
  );
}
