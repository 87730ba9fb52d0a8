// Ingests the Cluster API Machines whose infrastructure is a HostflowMachine, through the one
// ingest (ingest.ts), and no other Machine: each has its workflow
// (`machine/<ns>/<name>`), started or signalled on every create, change and delete, with what the
// workflow acts on (spec, deletion, pause, hooks, skip annotations). The periodic relist sends
// every Machine again and the ones deleted while the bridge was down as gone.
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import {
  MACHINE_ANNOTATIONS,
  MACHINE_API,
  isHostflowInfrastructure,
  type MachineSpec,
} from '../shared/machine-api.js';
import {
  machineObserved,
  machineStart,
  type MachineObservation,
} from '../shared/contracts/machine.js';
import { Ingest, type IngestOptions } from './ingest.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';

export interface MachineObject extends NamespacedObject {
  spec?: MachineSpec;
}

export function machineObservation(item: MachineObject, gone: boolean): MachineObservation {
  const annotations = item.metadata.annotations ?? {};
  const hooks = (prefix: string) =>
    Object.keys(annotations)
      .filter((key) => key.startsWith(`${prefix}/`))
      .sort();
  return {
    uid: item.metadata.uid,
    generation: item.metadata.generation ?? 1,
    spec: item.spec ?? {},
    deleting: gone || item.metadata.deletionTimestamp !== undefined,
    paused: MACHINE_ANNOTATIONS.paused in annotations,
    preDrainHooks: hooks(MACHINE_ANNOTATIONS.preDrainHookPrefix),
    preTerminateHooks: hooks(MACHINE_ANNOTATIONS.preTerminateHookPrefix),
    excludeDraining: MACHINE_ANNOTATIONS.excludeDraining in annotations,
    excludeVolumeWait: MACHINE_ANNOTATIONS.excludeVolumeWait in annotations,
  };
}

/** Each Machine's workflow; one gone is only told, if it still runs. */
export function machineIngest(options: IngestOptions): Ingest {
  const ingest = new Ingest(options);
  const seen = async (item: MachineObject, gone: boolean, relisted: boolean) => {
    // Another provider's Machine is not hostflow's to act on (its infrastructureRef is immutable).
    if (!isHostflowInfrastructure(item.spec?.infrastructureRef)) return;
    const { namespace, name } = item.metadata;
    const target = {
      workflowId: WORKFLOW_ID.machine(namespace, name),
      subject: `Machine ${namespace}/${name}`,
    };
    // Gone means its finalizer was removed, by its workflow or by hand: a running one is told.
    const message = () => ({
      signal: machineObserved,
      arg: machineObservation(item, gone),
      ...(gone ? {} : { start: machineStart(namespace, name) }),
    });
    await ingest.send(target, message, { anyway: relisted, forget: gone });
  };
  ingest.watch(resourceWatch<MachineObject>('Machine', MACHINE_API, ingest.watchOptions, seen));
  return ingest;
}
