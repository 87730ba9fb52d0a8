// Ingests HostflowMachines through the one ingest (ingest.ts): each has its workflow
// (`hostflow-machine/<ns>/<name>`), started or signalled on every create, change and delete,
// with what the workflow acts on (spec, owner Machine, cluster, pause, deletion). Cluster API
// core's Machines are not watched: Cluster API core runs their lifecycle. The periodic relist
// sends every HostflowMachine again, and the ones deleted while the bridge was down as gone.
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import {
  CLUSTER_NAME_LABEL,
  HOSTFLOW_MACHINE_API,
  MACHINE_API,
  PAUSED_ANNOTATION,
  type HostflowMachineSpec,
} from '../shared/machine-api.js';
import {
  machineObserved,
  machineStart,
  type MachineObservation,
} from '../shared/contracts/machine.js';
import { Ingest, type IngestOptions } from './ingest.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';

interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

export interface HostflowMachineObject extends NamespacedObject {
  metadata: NamespacedObject['metadata'] & { ownerReferences?: OwnerReference[] };
  spec?: HostflowMachineSpec;
}

export function machineObservation(item: HostflowMachineObject, gone: boolean): MachineObservation {
  const { metadata } = item;
  // Its controlling Machine, of Cluster API's group (any version), as Cluster API core sets it.
  const owner = (metadata.ownerReferences ?? []).find(
    (ref) =>
      ref.controller &&
      ref.kind === 'Machine' &&
      ref.apiVersion?.startsWith(`${MACHINE_API.group}/`) &&
      ref.name &&
      ref.uid,
  );
  const clusterName = metadata.labels?.[CLUSTER_NAME_LABEL];
  return {
    uid: metadata.uid,
    generation: metadata.generation ?? 1,
    spec: item.spec ?? {},
    ...(owner ? { owner: { name: owner.name!, uid: owner.uid! } } : {}),
    ...(clusterName ? { clusterName } : {}),
    paused: PAUSED_ANNOTATION in (metadata.annotations ?? {}),
    deleting: gone || metadata.deletionTimestamp !== undefined,
  };
}

/** Each HostflowMachine's workflow; one gone is only told, if it still runs. */
export function machineIngest(options: IngestOptions): Ingest {
  const ingest = new Ingest(options);
  const seen = async (item: HostflowMachineObject, gone: boolean, relisted: boolean) => {
    const { namespace, name } = item.metadata;
    const target = {
      workflowId: WORKFLOW_ID.hostflowMachine(namespace, name),
      subject: `HostflowMachine ${namespace}/${name}`,
    };
    // Gone means its finalizer was removed, by its workflow or by hand: a running one is told.
    const message = () => ({
      signal: machineObserved,
      arg: machineObservation(item, gone),
      ...(gone ? {} : { start: machineStart(namespace, name) }),
    });
    await ingest.send(target, message, { anyway: relisted, forget: gone });
  };
  ingest.watch(
    resourceWatch<HostflowMachineObject>(
      'HostflowMachine',
      HOSTFLOW_MACHINE_API,
      ingest.watchOptions,
      seen,
    ),
  );
  return ingest;
}
