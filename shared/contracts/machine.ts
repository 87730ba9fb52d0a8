// The HostflowMachine workflow's contract (`hostflow-machine/<ns>/<name>`): what starters pass,
// what the bridge tells it, and how it is started.
import { defineSignal } from '@temporalio/workflow';
import type { HostflowMachineSpec } from '../machine-api.js';
import { KIND } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';

/** Which HostflowMachine: its uid tells it apart from a same-named successor. */
export interface MachineRef {
  namespace: string;
  name: string;
  uid: string;
}

/** What a starter passes; a run carries more across continue-as-new (machine.ts). */
export interface MachineStartInput {
  namespace: string;
  name: string;
}

export type HostflowMachineWorkflow = (input: MachineStartInput) => Promise<void>;

/** A HostflowMachine as the bridge saw it: what the workflow acts on. */
export interface MachineObservation {
  uid: string;
  generation: number;
  spec: HostflowMachineSpec;
  /** The Machine that controls it (its controller ownerReference, set by Cluster API core). */
  owner?: { name: string; uid: string };
  /** Its Cluster, by Cluster API's label. */
  clusterName?: string;
  /** `cluster.x-k8s.io/paused` on the HostflowMachine itself. */
  paused: boolean;
  /** Its deletionTimestamp is set (or it is gone): give back what it holds, then let it go. */
  deleting: boolean;
}

export const machineObserved = defineSignal<[MachineObservation]>('hostflowMachineObserved');

export function machineStart(
  namespace: string,
  name: string,
): WorkflowStart<HostflowMachineWorkflow> {
  return {
    workflowType: 'hostflowMachineWorkflow',
    workflowId: WORKFLOW_ID.hostflowMachine(namespace, name),
    args: [{ namespace, name }],
    typedSearchAttributes: objectAttributes(KIND.machine, { namespace, name }),
    staticSummary: `HostflowMachine ${namespace}/${name}`,
    staticDetails:
      "Gives a Cluster API Machine its VM or host: waits for its owner Machine's bootstrap " +
      'data, takes one VM or host under a claim, runs the data over SSH, reports it ' +
      'provisioned, watches it, and gives it back when deleted.',
  };
}
