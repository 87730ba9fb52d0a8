// The Machine workflow's contract (`machine/<ns>/<name>`): what starters pass, what the bridge
// tells it, what its activities are asked about, and how it is started.
import { defineSignal } from '@temporalio/workflow';
import type { MachineSpec } from '../machine-api.js';
import { KIND } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';

/** Which Machine: its uid tells it apart from a same-named successor. */
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

export type MachineWorkflow = (input: MachineStartInput) => Promise<void>;

/** A Machine as the bridge saw it: what the workflow acts on, never the bootstrap data. */
export interface MachineObservation {
  uid: string;
  generation: number;
  spec: MachineSpec;
  /** Its deletionTimestamp is set (or it is gone): run the deletion steps, then let it go. */
  deleting: boolean;
  /** `cluster.x-k8s.io/paused` is set: no progress until it is removed. */
  paused: boolean;
  /** The pre-drain and pre-terminate hook annotations present, by full name. */
  preDrainHooks: string[];
  preTerminateHooks: string[];
  excludeDraining: boolean;
  excludeVolumeWait: boolean;
}

export const machineObserved = defineSignal<[MachineObservation]>('machineObserved');

export function machineStart(namespace: string, name: string): WorkflowStart<MachineWorkflow> {
  return {
    workflowType: 'machineWorkflow',
    workflowId: WORKFLOW_ID.machine(namespace, name),
    args: [{ namespace, name }],
    typedSearchAttributes: objectAttributes(KIND.machine, { namespace, name }),
    staticSummary: `Machine ${namespace}/${name}`,
    staticDetails:
      'Runs the Cluster API Machine lifecycle: bootstrap gating, infrastructure, bootstrap, ' +
      'Node join; on delete, hooks, drain, volumes, terminate, and the finalizer last.',
  };
}
