// How many ClusterOperations the bridge sees, by phase and action, for the
// hostflow_cluster_operations gauge: each operation's labels by uid, as its watch last reported
// it, gone when the watch says it is gone. Labels come from closed lists (the CRD's enums), a
// tenant's own action counted as `custom` and an unexpected value as `other`: never a name, so
// the series stay few.
import type { OperationPhase } from '../shared/contracts/cluster-operation.js';
import { BUILTIN_PLAYBOOKS } from '../shared/cluster-operation-api.js';

export const PHASES: readonly OperationPhase[] = [
  'Pending',
  'Running',
  'Succeeded',
  'Failed',
  'Cancelled',
];
const OTHER = 'other';
/** kubespray's entry points, and a tenant's own playbook or script (actionSource configmap). */
export const ACTION_LABELS: readonly string[] = [...BUILTIN_PLAYBOOKS, 'custom'];

export interface OperationLabels {
  phase: string;
  action: string;
}

export class ClusterOperationCounts {
  private readonly seen = new Map<string, OperationLabels>();

  /** An operation as its watch reports it; `phase` undefined until the engine writes a status. */
  observe(
    uid: string,
    gone: boolean,
    phase: string | undefined,
    spec: { action?: string; actionSource?: string } = {},
  ) {
    if (gone) {
      this.seen.delete(uid);
      return;
    }
    this.seen.set(uid, {
      // No status yet: the engine has not taken it, so it waits as a Pending one does.
      phase: PHASES.find((p) => p === (phase ?? 'Pending')) ?? OTHER,
      action:
        spec.actionSource === 'configmap'
          ? 'custom'
          : (BUILTIN_PLAYBOOKS.find((a) => a === spec.action) ?? OTHER),
    });
  }

  /**
   * Every phase and action, zero where none is: a series that stops at zero, rather than
   * vanishing, lets a panel show "none running" and a rate see the drop.
   */
  counts(): Array<[OperationLabels, number]> {
    const counts = new Map<string, [OperationLabels, number]>();
    const key = ({ phase, action }: OperationLabels) => `${phase} ${action}`;
    for (const phase of PHASES)
      for (const action of ACTION_LABELS)
        counts.set(key({ phase, action }), [{ phase, action }, 0]);
    for (const labels of this.seen.values()) {
      const entry = counts.get(key(labels)) ?? [labels, 0];
      entry[1] += 1;
      counts.set(key(labels), entry);
    }
    return [...counts.values()];
  }
}
