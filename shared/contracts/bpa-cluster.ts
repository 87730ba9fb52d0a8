// The BPA Cluster workflow's contract (`bpa-cluster/<ns>/<name>`): its input, what the bridge
// tells it of the Cluster and of the members it names, and how it is started.
import { defineSignal } from '@temporalio/workflow';
import type { BpaClusterSpec } from '../bpa-api.js';
import { KIND } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';
import type { ProvisioningObservation } from './provisioning.js';
import type { SoftwareObservation } from './software.js';

/** What a starter passes; a run carries more across continue-as-new. */
export interface BpaClusterInput {
  namespace: string;
  name: string;
}

export type BpaClusterWorkflow = (input: BpaClusterInput) => Promise<void>;

/** A member resource a Cluster names, as the bridge last saw it; absent while it does not exist. */
export interface ClusterMember<Observation> {
  phase?: string;
  /** What its own workflow is sent: the Cluster starts that workflow if need be and passes it on. */
  observation: Observation;
}

export interface BpaClusterObservation {
  uid: string;
  generation: number;
  spec: BpaClusterSpec;
  deleting: boolean;
  provisioning?: ClusterMember<ProvisioningObservation>;
  software?: ClusterMember<SoftwareObservation>;
}

export const bpaClusterObserved = defineSignal<[BpaClusterObservation]>('bpaClusterObserved');

export function bpaClusterStart(
  namespace: string,
  name: string,
): WorkflowStart<BpaClusterWorkflow> {
  return {
    workflowType: 'bpaClusterWorkflow',
    workflowId: WORKFLOW_ID.bpaCluster(namespace, name),
    args: [{ namespace, name }],
    typedSearchAttributes: objectAttributes(KIND.bpaCluster, { namespace, name }),
    staticSummary: `Cluster ${namespace}/${name}`,
    staticDetails:
      'Runs the Provisioning and the Software it names as child workflows, aggregates their status, and deletes both when it is deleted.',
  };
}
