// What a Provisioning's line of ClusterOperations carries across continue-as-new (v19), and what
// it takes over from a run from before v19 (the handover): there, the line held what the bridge
// saw of each operation, its spec and the step a retry resumes at among it. Pure.
import type { OperationTicket } from '../../shared/contracts/cluster-operation.js';
import type { OperationsState } from './operations.js';

export interface LineState {
  queued: OperationTicket[];
  /** Operations (uid) that ended, and retries (uid@value) taken. */
  ended: string[];
  /** The `kube_version` the last upgrade set. */
  kubeVersion?: string;
  /** Where each Failed operation stopped (by uid): its retry starts there. */
  failedSteps?: Record<string, string>;
}

/** The line's own last state, or the one a run from before v19 hands over. */
export function lineStateOf(carried: LineState | OperationsState | undefined): LineState {
  const failedSteps = { ...(carried && 'failedSteps' in carried ? carried.failedSteps : {}) };
  const queued = (carried?.queued ?? []).map((op): OperationTicket => {
    if ('action' in op) return op;
    // What the bridge saw: its spec names the action, and a retry where its run had failed.
    if (op.failedStep) failedSteps[op.uid] ??= op.failedStep;
    const { name, uid, createdAt, retry } = op;
    return { name, uid, createdAt, action: op.spec.action ?? '', ...(retry ? { retry } : {}) };
  });
  return {
    queued,
    ended: carried?.ended ?? [],
    ...(carried?.kubeVersion ? { kubeVersion: carried.kubeVersion } : {}),
    ...(Object.keys(failedSteps).length ? { failedSteps } : {}),
  };
}
