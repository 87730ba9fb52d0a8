// What a Provisioning's line of ClusterOperations carries across continue-as-new, and what it takes
// over from a 0.x run that ran its operations as children that continued as new into this code: there, the line held
// what the bridge saw of each operation, its spec and the step a retry resumes at among it. Pure.
import type {
  ClusterOperationObservation,
  OperationTicket,
} from '../../shared/contracts/cluster-operation.js';

export interface LineState {
  queued: OperationTicket[];
  /** Operations (uid) that ended, and retries (uid@value) taken. */
  ended: string[];
  /** The `kube_version` the last upgrade set. */
  kubeVersion?: string;
  /** Where each Failed operation stopped (by uid): its retry starts there. */
  failedSteps?: Record<string, string>;
}

/** What a 0.x run that ran its operations as children carried: the operations it had queued as the bridge saw them. */
export interface OperationsState {
  queued: ClusterOperationObservation[];
  ended: string[];
  /** The `kube_version` the last upgrade set. */
  kubeVersion?: string;
}

/** The line's own last state, or the one a 0.x run that ran its operations as children carried over. */
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
