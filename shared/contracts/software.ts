// The Software workflow's contract (`software/<ns>/<name>`): its input, what the bridge tells it
// (with the cluster it installs on), and how it is started, by the bridge or as a Cluster's child.
import { defineSignal } from '@temporalio/workflow';
import type { SoftwareSpec } from '../bpa-api.js';
import { KIND } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';

/** What a starter passes; a run carries more across continue-as-new. */
export interface SoftwareInput {
  namespace: string;
  name: string;
}

export type SoftwareWorkflow = (input: SoftwareInput) => Promise<void>;

/** A node of a cluster as its Provisioning's status reports it. */
export interface ClusterNode {
  label: string;
  roles: string[];
  ip: string;
  /** The user the installer key logs in as (root, or a sudoer). */
  user: string;
}

/** What the bridge knows of the cluster a Software names: its Provisioning's phase and nodes. */
export interface ClusterView {
  provisioning: string;
  phase: string;
  nodes: ClusterNode[];
}

/** What the bridge saw of a Software, with the cluster it installs on as it is now. */
export interface SoftwareObservation {
  uid: string;
  generation: number;
  /** Its `cluster` label. */
  cluster?: string;
  spec: SoftwareSpec;
  deleting: boolean;
  /** Its retry annotation: a new value installs again on the nodes that failed. */
  retry?: string;
  /** No Provisioning builds its cluster (in its namespace): absent. */
  clusterView?: ClusterView;
}

export const softwareObserved = defineSignal<[SoftwareObservation]>('softwareObserved');

export function softwareStart(
  namespace: string,
  name: string,
  cluster?: string,
): WorkflowStart<SoftwareWorkflow> {
  return {
    workflowType: 'softwareWorkflow',
    workflowId: WORKFLOW_ID.software(namespace, name),
    args: [{ namespace, name }],
    typedSearchAttributes: objectAttributes(KIND.software, { namespace, name }),
    staticSummary: `Software ${namespace}/${name}`,
    staticDetails: `Installs its packages on every node of cluster ${cluster ?? '(no cluster label)'}, per role, once the cluster is Ready.`,
  };
}
