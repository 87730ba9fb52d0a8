// The ClusterOperation contract. Since v19 each operation has its own workflow from its creation
// (`cluster-operation/<ns>/<name>`), which takes its turn on its Provisioning's cluster (below).
// Before, the bridge told a Provisioning's workflow of the operations that name it, and that
// workflow ran each one as its child, one at a time, in creation order: those runs replay with
// the first half of this file.
import { defineSignal, defineUpdate } from '@temporalio/workflow';
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
  /** The step its last run failed at (status.failedStep); bridges since v19 send neither. */
  failedStep?: string;
  /**
   * Its spec's size in bytes, when that is over MAX_SPEC_BYTES: the spec was not sent whole, only
   * `provisioning` (shared/cluster-operation-limits.ts).
   */
  specBytes?: number;
}

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

// How a ClusterOperation's own workflow takes its turn on its Provisioning's cluster (v19): the
// bridge starts `cluster-operation/<ns>/<name>` when the object appears; the workflow checks its
// spec, then asks the Provisioning's workflow for a turn (an update, sent by an activity), and
// waits. The Provisioning's workflow keeps only the line: it tells each waiting operation its
// place, gives the first its turn with what its playbooks need, and hears how the turn ended.

/** What the bridge starts an operation's workflow with: the object as it appeared. */
export interface ClusterOperationRequest {
  namespace: string;
  name: string;
  uid: string;
  /** Its creationTimestamp: operations take their turns in this order (then by name). */
  createdAt: string;
  spec: ClusterOperationSpec;
  /** Its spec's size, when over MAX_SPEC_BYTES: the spec was not sent whole, only its Provisioning. */
  specBytes?: number;
  /** The retry annotation this run is for: a Failed operation runs again from where it failed. */
  retry?: string;
}

/**
 * What the bridge tells an operation's workflow each time it sees the object (and with which it
 * starts it): small, since a relist tells it again for as long as it waits.
 */
export interface ClusterOperationSeen {
  uid: string;
  /** Its deletionTimestamp is set, or it is gone: it leaves the line, or its playbook stops. */
  deleting: boolean;
  /** The retry a Failed one is started again for (a new value is a new message to send). */
  retry?: string;
}

export const clusterOperationSeen = defineSignal<[ClusterOperationSeen]>('clusterOperationSeen');

/** A place in a Provisioning's line: an operation, in creation order. */
export interface OperationTicket {
  name: string;
  uid: string;
  createdAt: string;
  /** Its spec.action, which the Provisioning's Lock and last operation name. */
  action: string;
  retry?: string;
}

/** Where a waiting operation is, and why even the first in line cannot start yet (if so). */
export interface OperationPlace {
  /** Operations ahead of it (0: it is first). */
  ahead: number;
  /** The operation running now, if one is. */
  running?: string;
  /** What it waits for: `cluster <name>`. */
  waitsFor: string;
  wait?: { why: string; opensAt?: number };
}

/**
 * The Provisioning's answer to a turn asked: a place in its line (and its cluster's name), or
 * why it is refused, or `ran` when this operation (or this retry of it) has had its turn already.
 */
export type TurnAnswer =
  | (OperationPlace & { cluster: string })
  | { refused: string }
  | { ran: true }
  /** The Provisioning's run predates turns: it continues as new, and the next run answers. */
  | { notYet: string };

/** Asked of the Provisioning's workflow by an operation's workflow, through an activity. */
export const requestOperationTurn = defineUpdate<TurnAnswer, [OperationTicket]>(
  'requestOperationTurn',
);

/** A waiting operation left the line (it was deleted). */
export const operationLeft = defineSignal<[{ uid: string }]>('operationLeft');

/** The operation that had the turn ended (its workflow is closing): the next may go. */
export const operationTurnEnded =
  defineSignal<[{ uid: string; outcome: ClusterOperationOutcome }]>('operationTurnEnded');

/** To a waiting operation: its place in line moved, or why they wait did. */
export const operationPlaceMoved = defineSignal<[OperationPlace]>('operationPlaceMoved');

/** To the first in line: its turn, with where its playbooks go and, for a retry, where to start. */
export const operationTurn =
  defineSignal<[{ target: OperationCluster; from?: string }]>('operationTurn');

/** To a waiting operation: it will not run (its Provisioning is going), and why. */
export const operationDropped = defineSignal<[{ why: string }]>('operationDropped');

export type ClusterOperationLifecycleWorkflow = (
  request: ClusterOperationRequest,
) => Promise<ClusterOperationOutcome | undefined>;

export function clusterOperationLifecycleStart(
  request: ClusterOperationRequest,
): WorkflowStart<ClusterOperationLifecycleWorkflow> {
  const { namespace, name, spec } = request;
  const action = spec.action ?? '';
  const provisioning = spec.provisioning ?? '';
  return {
    workflowType: 'clusterOperationLifecycleWorkflow',
    workflowId: WORKFLOW_ID.clusterOperation(namespace, name),
    args: [request],
    typedSearchAttributes: [
      ...objectAttributes(KIND.clusterOperation, { namespace, name }),
      { key: SA.action, value: action },
    ],
    staticSummary: `ClusterOperation ${namespace}/${name}: ${action} on Provisioning ${provisioning}`,
    staticDetails:
      `Checks its spec, waits for its turn on the cluster of Provisioning ${namespace}/` +
      `${provisioning}, then runs ${action} with its hooks before and after.`,
  };
}
