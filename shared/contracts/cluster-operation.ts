// The ClusterOperation contract: what the bridge tells a Provisioning's workflow of the operations
// that name it, and how that workflow runs each one as its child (`cluster-operation/<ns>/<name>`),
// one at a time, in creation order.
import { defineSignal } from '@temporalio/workflow';
import type { ClusterOperationSpec } from '../cluster-operation-api.js';
import { KIND, SA } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import type { Inventory } from '../inventory.js';
import type { ProvisioningRef } from './provisioning.js';

/** What the bridge saw of a ClusterOperation. */
export interface ClusterOperationObservation {
  name: string;
  uid: string;
  /** Its creationTimestamp: operations take their turns in this order (then by name). */
  createdAt: string;
  spec: ClusterOperationSpec;
  /** Its status.phase when it has ended (Succeeded, Failed, Cancelled): nothing is left to run. */
  ended?: string;
  /** Its deletionTimestamp is set, or it is gone: a queued one leaves, a running one is cancelled. */
  deleting: boolean;
  /** Its retry annotation: a new value runs a Failed one again from the step that failed. */
  retry?: string;
  /** The retry annotation its last run was started for (status.retry). */
  retried?: string;
  /** The step its last run failed at (status.failedStep). */
  failedStep?: string;
  /**
   * Its spec's size in bytes, when that is over MAX_SPEC_BYTES: the spec was not sent whole, only
   * `provisioning` (shared/cluster-operation-limits.ts).
   */
  specBytes?: number;
}

/** Sent to the workflow of the Provisioning the operation names (`spec.provisioning`). */
export const clusterOperationObserved = defineSignal<[ClusterOperationObservation]>(
  'clusterOperationObserved',
);

/** Where and how an operation's playbooks reach the cluster: what its Provisioning installed. */
export interface OperationCluster {
  cluster: string;
  provisioning: ProvisioningRef;
  inventory: Inventory;
  groupVars: string;
  sshUser: string;
  sshKeySecret: string;
  kubesprayRelease?: string;
  hostKeys?: Record<string, GivenHostKey>;
}

export interface ClusterOperationInput {
  namespace: string;
  name: string;
  uid: string;
  spec: ClusterOperationSpec;
  target: OperationCluster;
  /** A retry: the steps before `from` succeeded in an earlier run and are not run again. */
  resume?: { from: string; retry: string };
}

export type OperationPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Cancelled';

export interface ClusterOperationOutcome {
  phase: 'Succeeded' | 'Failed' | 'Cancelled';
  message: string;
  /** The step that failed or was running when cancelled (`preHook[0]`, `action`…). */
  failedStep?: string;
  /** The `kube_version` the action set, when it succeeded and set one. */
  kubeVersion?: string;
}

export type ClusterOperationWorkflow = (
  input: ClusterOperationInput,
) => Promise<ClusterOperationOutcome>;

export function clusterOperationStart(
  input: ClusterOperationInput,
): WorkflowStart<ClusterOperationWorkflow> {
  const { namespace, name, spec, target } = input;
  const action = spec.action ?? '';
  return {
    workflowType: 'clusterOperationWorkflow',
    workflowId: WORKFLOW_ID.clusterOperation(namespace, name),
    args: [input],
    typedSearchAttributes: [
      ...objectAttributes(KIND.clusterOperation, { namespace, name }),
      { key: SA.clusterName, value: target.cluster },
      { key: SA.action, value: action },
    ],
    staticSummary: `ClusterOperation ${namespace}/${name}: ${action} on cluster ${target.cluster}`,
    staticDetails:
      `Runs ${action} on cluster ${target.cluster} (Provisioning ${namespace}/` +
      `${target.provisioning.name}), with its hooks before and after.`,
  };
}
