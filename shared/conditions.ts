// A resource's status Conditions: one shape for every kind hostflow writes status for
// (Provisionings, Software, BPA Clusters, ClusterOperations, Machines in Cluster API's v1beta1
// words, pools, Locks), and one rule for their time: a condition's lastTransitionTime moves only
// when its status does. Pure and clock-free, so workflow code uses it too: the caller passes
// `now` (a workflow its own time, the Lock status writer the wall clock).

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  /** Cluster API v1beta1: how bad a False condition is. */
  severity?: 'Error' | 'Warning' | 'Info';
  /** The spec generation the condition was set for. */
  observedGeneration?: number;
  /** When `status` last changed (not when the condition was last written). */
  lastTransitionTime: string;
}

/** A condition as it is set: withCondition stamps its transition time. */
export type ConditionChange = Omit<Condition, 'lastTransitionTime'>;

/** A condition as read back (from the API server, or a state older than the rule): maybe untimed. */
export type ObservedCondition = ConditionChange & { lastTransitionTime?: string };

/**
 * `list` with `change` in it, last; the others keep their order. Its transition time stays when
 * its status did not change (and the one before had a time), else it is `now`.
 */
export function withCondition<C extends ObservedCondition>(
  list: readonly C[],
  change: ConditionChange,
  now: string,
): Array<C | Condition> {
  const before = list.find((c) => c.type === change.type);
  const lastTransitionTime =
    before && before.status === change.status ? (before.lastTransitionTime ?? now) : now;
  return [...list.filter((c) => c.type !== change.type), { ...change, lastTransitionTime }];
}
