// What an operation's steps need before the first runs, or why nothing runs: the text of each
// custom action, read from its ConfigMap once as the run starts (and so kept in its history); and
// for a destructive action, the cluster named in spec.confirm and remove-node.yml's nodes among
// the cluster's workers.
import type { CustomAction } from '../../activities/ansible/custom-action.js';
import { DESTRUCTIVE_PLAYBOOKS, type OperationStep } from '../../shared/cluster-operation-api.js';
import type { ClusterOperationInput } from '../../shared/contracts/cluster-operation.js';
import { innermostMessage } from '../../shared/failures.js';
import { inventoryNodes, labelsWithRole } from '../../shared/inventory.js';
import { operationApi } from './activity-proxies.js';

/** Each custom step's action by step name; or, with nothing run, why not. */
export async function prepareSteps(
  input: ClusterOperationInput,
  steps: OperationStep[],
): Promise<Map<string, CustomAction> | { refused: string }> {
  const destructive = steps.find(
    (step) => !step.custom && DESTRUCTIVE_PLAYBOOKS.includes(step.action),
  );
  if (destructive) {
    const refused = unconfirmed(input, destructive);
    if (refused) return { refused: `Nothing was run: ${refused}` };
  }
  const custom = steps.filter((step) => step.custom);
  if (!custom.length) return new Map();
  try {
    const texts = await operationApi.readCustomActions({
      namespace: input.namespace,
      actions: custom.map((step) => step.custom!),
    });
    return new Map(custom.map((step, i) => [step.name, { ...step.custom!, content: texts[i]! }]));
  } catch (err) {
    return { refused: `Nothing was run: ${innermostMessage(err)}` };
  }
}

/** Why a destructive step may not run: the cluster not named, or nodes that are not workers. */
function unconfirmed(input: ClusterOperationInput, step: OperationStep): string | undefined {
  const { cluster, inventory } = input.target;
  if (input.spec.confirm !== cluster) {
    return `${step.action} takes Kubernetes off nodes: set spec.confirm to the cluster's name, ${cluster}`;
  }
  const nodes = inventoryNodes(inventory);
  const workers = labelsWithRole(nodes, 'worker');
  const masters = labelsWithRole(nodes, 'master');
  const wrong = (step.nodes ?? []).filter(
    (node) => !workers.includes(node) || masters.includes(node),
  );
  if (wrong.length) {
    return (
      `spec.nodes: ${wrong.join(', ')} is not a worker of cluster ${cluster} ` +
      `(its workers: ${workers.filter((w) => !masters.includes(w)).join(', ') || 'none'})`
    );
  }
  return undefined;
}
