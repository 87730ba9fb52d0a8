// The check an operation's spec passes as its run starts, before anything runs. Its variables are
// checked by the deny-list and each action's allow-list (shared/cluster-operation-vars.ts).
import { deprecatePatch } from '@temporalio/workflow';
import { checkOperationSpec } from '../../shared/cluster-operation-api.js';
import type { ClusterOperationSpec } from '../../shared/cluster-operation-api.js';

/**
 * v2 of the variables check: the deny-list, then the action's allow-list, not the names hostflow
 * sets alone. Marked only for a spec the two rules judge apart.
 */
export const PATCH_VARIABLES_ALLOW_LIST = 'cluster-operation-variables-allow-list';

export function checkSpec(spec: ClusterOperationSpec): ReturnType<typeof checkOperationSpec> {
  const checked = checkOperationSpec(spec);
  // The marker only where the rule before it judged the spec otherwise, as it was recorded.
  const before = checkOperationSpec(spec, 'reserved-names');
  const apart = JSON.stringify(checked) !== JSON.stringify(before);
  if (apart) deprecatePatch(PATCH_VARIABLES_ALLOW_LIST);
  return checked;
}
