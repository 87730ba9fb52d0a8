// The check an operation's spec passes as its run starts, before anything runs. Its variables are
// checked by the deny-list and each action's allow-list (shared/cluster-operation-vars.ts); a run
// recorded before those were checked the names hostflow sets alone, and replays so.
import { patched } from '@temporalio/workflow';
import { checkOperationSpec } from '../../shared/cluster-operation-api.js';
import type { ClusterOperationSpec } from '../../shared/cluster-operation-api.js';

/** v2 of the variables check: the deny-list, then the action's allow-list. */
export const PATCH_VARIABLES_ALLOW_LIST = 'cluster-operation-variables-allow-list';

export function checkSpec(spec: ClusterOperationSpec): ReturnType<typeof checkOperationSpec> {
  const checked = checkOperationSpec(spec);
  const before = checkOperationSpec(spec, 'reserved-names');
  // The marker only where the two disagree: elsewhere either branch commands the same.
  if (JSON.stringify(checked) === JSON.stringify(before)) return checked;
  return patched(PATCH_VARIABLES_ALLOW_LIST) ? checked : before;
}
