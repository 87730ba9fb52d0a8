// Cluster API Machines (cluster.x-k8s.io/v1beta1; the local stack's stand-in CRD is
// local-stack/upstream-crds/capi-machine.yaml) and hostflow's own infrastructure kind
// (deploy/families/machines/hostflow-machine.yaml): API coordinates, the annotations and finalizer Cluster API
// defines, its v1beta1 condition types and reasons, and the fields hostflow reads and writes (its
// conditions are shared/conditions.ts's). Shared by the bridge, activities and workflows.
import type { ObservedCondition } from './conditions.js';

export const MACHINE_API = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta1',
  plural: 'machines',
} as const;

/** Where a Machine comes from: a host-config platform, dynamic (a cloud VM) or static (a host). */
export const HOSTFLOW_MACHINE_API = {
  group: 'infrastructure.hostflow.dev',
  version: 'v1alpha1',
  plural: 'hostflowmachines',
} as const;
export const HOSTFLOW_MACHINE_KIND = 'HostflowMachine';

/**
 * Whether a Machine's infrastructure is a HostflowMachine (of any version of its group): only
 * those are hostflow's. A Machine of another provider is that provider's and Cluster API's, and
 * hostflow neither reads nor writes it.
 */
export function isHostflowInfrastructure(ref: { apiVersion?: string; kind?: string } | undefined) {
  if (ref?.kind !== HOSTFLOW_MACHINE_KIND) return false;
  return (
    ref.apiVersion === undefined || ref.apiVersion.startsWith(`${HOSTFLOW_MACHINE_API.group}/`)
  );
}

/** Added before any external action; removed only when every clean-up step is done. */
export const MACHINE_FINALIZER = 'machine.cluster.x-k8s.io';

export const MACHINE_ANNOTATIONS = {
  paused: 'cluster.x-k8s.io/paused',
  preDrainHookPrefix: 'pre-drain.delete.hook.machine.cluster.x-k8s.io',
  preTerminateHookPrefix: 'pre-terminate.delete.hook.machine.cluster.x-k8s.io',
  excludeDraining: 'machine.cluster.x-k8s.io/exclude-node-draining',
  excludeVolumeWait: 'machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach',
} as const;

/** On the bootstrap Secret: the bootstrap data itself (the contract's only required key). */
export const BOOTSTRAP_DATA_KEY = 'value';
/** What bootstrap data writes on the host when it succeeded (Cluster API's contract). */
export const BOOTSTRAP_SENTINEL = '/run/cluster-api/bootstrap-success.complete';

export type MachinePhase =
  'Pending' | 'Provisioning' | 'Provisioned' | 'Running' | 'Deleting' | 'Deleted' | 'Failed';

/** v1beta1 condition types and reasons (api/core/v1beta1/condition_consts.go). */
export const CONDITION = {
  ready: 'Ready',
  bootstrapReady: 'BootstrapReady',
  infrastructureReady: 'InfrastructureReady',
  nodeHealthy: 'NodeHealthy',
  drainingSucceeded: 'DrainingSucceeded',
  preDrainHookSucceeded: 'PreDrainDeleteHookSucceeded',
  preTerminateHookSucceeded: 'PreTerminateDeleteHookSucceeded',
  volumeDetachSucceeded: 'VolumeDetachSucceeded',
  paused: 'Paused',
} as const;

export const REASON = {
  waitingForDataSecret: 'WaitingForDataSecret',
  waitingForInfrastructure: 'WaitingForInfrastructure',
  waitingForNodeRef: 'WaitingForNodeRef',
  nodeProvisioning: 'NodeProvisioning',
  nodeNotFound: 'NodeNotFound',
  waitingExternalHook: 'WaitingExternalHook',
  draining: 'Draining',
  drainingFailed: 'DrainingFailed',
  waitingForVolumeDetach: 'WaitingForVolumeDetach',
  deleting: 'Deleting',
  instanceStateUnexpected: 'InstanceStateUnexpected',
  infrastructureFailed: 'InfrastructureFailed',
  bootstrapFailed: 'BootstrapFailed',
  paused: 'Paused',
  /** The API server refused a write for it (403: an admission policy, a webhook). */
  forbidden: 'Forbidden',
} as const;

/** v1beta1 failureReason values (api/deprecated/errors/consts.go) hostflow sets. */
export type MachineFailureReason =
  | 'InvalidConfiguration'
  | 'CreateError'
  | 'UpdateError'
  | 'DeleteError'
  | 'JoinClusterTimeoutError';

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  namespace?: string;
}

export interface MachineSpec {
  clusterName?: string;
  bootstrap?: { dataSecretName?: string; configRef?: ObjectReference };
  infrastructureRef?: ObjectReference;
  providerID?: string;
  version?: string;
  /** Durations as Cluster API writes them (`10m`, `90s`); unset or `0s` means no bound. */
  nodeDrainTimeout?: string;
  nodeVolumeDetachTimeout?: string;
  nodeDeletionTimeout?: string;
}

export interface MachineAddress {
  type: 'Hostname' | 'ExternalIP' | 'InternalIP' | 'ExternalDNS' | 'InternalDNS';
  address: string;
}

export interface MachineStatus {
  phase?: MachinePhase;
  bootstrapReady?: boolean;
  infrastructureReady?: boolean;
  addresses?: MachineAddress[];
  nodeRef?: { apiVersion: 'v1'; kind: 'Node'; name: string; uid?: string };
  lastUpdated?: string;
  failureReason?: MachineFailureReason;
  failureMessage?: string;
  /** v1beta1 conditions (severity on a False one), as read back: maybe untimed. */
  conditions?: ObservedCondition[];
  observedGeneration?: number;
}

export interface HostflowMachineSpec {
  /** A host-config platform: dynamic (a VM of its own) or static (one of its hosts). */
  platform?: string;
  /** How long the Node may take to join before the Machine says so (Go duration, default 10m). */
  nodeStartupTimeout?: string;
}
