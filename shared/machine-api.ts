// hostflow as a Cluster API infrastructure provider: its InfraMachine kind HostflowMachine and its
// template (deploy/families/machines), the v1beta2 InfraMachine contract they meet, and what
// hostflow reads of Cluster API core's own objects (the Machine that owns a HostflowMachine, its
// Cluster) without ever writing them. Shared by the bridge, activities and workflows.
import type { ObservedCondition } from './conditions.js';

/** Cluster API core's Machine, read (never written) for its bootstrap data and cluster. */
export const MACHINE_API = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta2',
  plural: 'machines',
} as const;

/** Cluster API core's Cluster, read for spec.paused. */
export const CLUSTER_API = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta2',
  plural: 'clusters',
} as const;

/** Where a Machine's host comes from: a host-config platform, dynamic (a VM) or static (a host). */
export const HOSTFLOW_MACHINE_API = {
  group: 'infrastructure.hostflow.dev',
  version: 'v1alpha1',
  plural: 'hostflowmachines',
} as const;
export const HOSTFLOW_MACHINE_KIND = 'HostflowMachine';
export const HOSTFLOW_MACHINE_TEMPLATE_KIND = 'HostflowMachineTemplate';

/**
 * Whether a Machine's infrastructure is a HostflowMachine (of any version of its group): only
 * those are hostflow's. A Machine of another provider is that provider's and Cluster API's.
 */
export function isHostflowInfrastructure(
  ref: { apiVersion?: string; apiGroup?: string; kind?: string } | undefined,
) {
  if (ref?.kind !== HOSTFLOW_MACHINE_KIND) return false;
  if (ref.apiGroup !== undefined) return ref.apiGroup === HOSTFLOW_MACHINE_API.group;
  return (
    ref.apiVersion === undefined || ref.apiVersion.startsWith(`${HOSTFLOW_MACHINE_API.group}/`)
  );
}

/** On the HostflowMachine: held until its VM is terminated or its host given back. */
export const HOSTFLOW_MACHINE_FINALIZER = 'hostflowmachine.infrastructure.hostflow.dev';

/** Cluster API's: on a HostflowMachine or its Cluster's object, nothing moves until removed. */
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';
/** Cluster API's label naming the Cluster an object belongs to. */
export const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';

/** On the bootstrap Secret: the bootstrap data itself (the contract's only required key). */
export const BOOTSTRAP_DATA_KEY = 'value';
/** What bootstrap data writes on the host when it succeeded (Cluster API's contract). */
export const BOOTSTRAP_SENTINEL = '/run/cluster-api/bootstrap-success.complete';

/** The HostflowMachine's v1beta2 condition types (metav1.Condition: a reason always). */
export const CONDITION = {
  ready: 'Ready',
  paused: 'Paused',
} as const;

/** Reasons of its Ready and Paused conditions, in Cluster API's words where it has them. */
export const REASON = {
  ready: 'Ready',
  waitingForOwner: 'WaitingForOwner',
  waitingForBootstrapData: 'WaitingForBootstrapData',
  waitingForHost: 'WaitingForHost',
  provisioning: 'Provisioning',
  invalidConfiguration: 'InvalidConfiguration',
  infrastructureFailed: 'InfrastructureFailed',
  bootstrapFailed: 'BootstrapFailed',
  /** Its VM was terminated or stopped out of band: a MachineHealthCheck can act on it. */
  instanceTerminated: 'InstanceTerminated',
  deleting: 'Deleting',
  /** The API server refused a write for it (403: an admission policy, a webhook). */
  forbidden: 'Forbidden',
  paused: 'Paused',
  notPaused: 'NotPaused',
} as const;

export interface ObjectReference {
  apiVersion?: string;
  apiGroup?: string;
  kind?: string;
  name?: string;
  namespace?: string;
}

/** What hostflow reads of the owning Machine (v1beta2). */
export interface MachineSpec {
  clusterName?: string;
  bootstrap?: { dataSecretName?: string; configRef?: ObjectReference };
  infrastructureRef?: ObjectReference;
  failureDomain?: string;
}

export interface MachineAddress {
  type: 'Hostname' | 'ExternalIP' | 'InternalIP' | 'ExternalDNS' | 'InternalDNS';
  address: string;
}

export interface HostflowMachineSpec {
  /** A host-config platform: dynamic (a VM of its own) or static (one of its hosts). */
  platform?: string;
  /** Set once, by hostflow, when its VM or host is taken; Cluster API copies it to the Machine. */
  providerID?: string;
}

/** The HostflowMachine's status, by the v1beta2 InfraMachine contract. */
export interface HostflowMachineStatus {
  initialization?: { provisioned?: boolean };
  addresses?: MachineAddress[];
  /** The zone its VM runs in, where the platform's cloud has zones. */
  failureDomain?: string;
  instanceID?: string;
  conditions?: ObservedCondition[];
}
