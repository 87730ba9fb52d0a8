// The Machine Config Operator's API as hostflow serves it (the local stack's stand-in CRDs are
// local-stack/upstream-crds/mco-*.yaml): pools of nodes, the MachineConfigs whose osImageURL
// overrides a pool's OS image, and the annotations by which each node says where its update
// stands. Names and values are MCO's, so tools that read them (`oc get mcp`, dashboards watching
// node annotations) keep working.
export const MCO_GROUP = 'machineconfiguration.openshift.io';
export const MACHINE_CONFIG_POOL_API = {
  group: MCO_GROUP,
  version: 'v1',
  plural: 'machineconfigpools',
} as const;
export const MACHINE_CONFIG_API = {
  group: MCO_GROUP,
  version: 'v1',
  plural: 'machineconfigs',
} as const;

/** The label by which a MachineConfig names the pool (role) it is for. */
export const ROLE_LABEL = `${MCO_GROUP}/role`;

/** Per-node annotations, as MCO's daemon writes them. */
export const NODE_ANNOTATIONS = {
  currentImage: `${MCO_GROUP}/currentImage`,
  desiredImage: `${MCO_GROUP}/desiredImage`,
  state: `${MCO_GROUP}/state`,
  reason: `${MCO_GROUP}/reason`,
} as const;

export type NodeUpdateState = 'Working' | 'Done' | 'Degraded';

/**
 * Where a pool's base (release) image comes from, as in MCO: a ConfigMap in the engine namespace
 * with the key `baseOSContainerImage`. Deleting every override rolls the pool back to it.
 */
export const OS_IMAGE_CONFIGMAP = {
  name: 'machine-config-osimageurl',
  key: 'baseOSContainerImage',
} as const;

/**
 * A pool opts in to hostflow with this label, naming the engine's namespace: only that engine
 * serves it. A pool without it is never served, since it may be the MCO's (or another engine's).
 */
export const POOL_ENGINE_LABEL = 'hostflow.dev/engine';

/**
 * Where the Machine Config Operator runs (OpenShift, OKD), it owns every pool and the node
 * annotations hostflow would write: the rollout family then serves no pool. Either sign is
 * enough: its ClusterOperator, or its daemon's DaemonSet in its namespace.
 */
export const MCO_SIGNS = {
  clusterOperator: {
    group: 'config.openshift.io',
    version: 'v1',
    plural: 'clusteroperators',
    name: 'machine-config',
  },
  daemonSet: { namespace: 'openshift-machine-config-operator', name: 'machine-config-daemon' },
} as const;

/** hostflow's settings for a pool, as annotations on it (MCO's daemon needs none: it runs on the node). */
export const ROLLOUT_SETTINGS = {
  /** Who logs in to the pool's nodes over SSH (with sudo -n unless root). */
  sshUser: { annotation: 'hostflow.dev/ssh-user', default: 'core' },
  /** The Secret in the engine namespace with that user's private key (`id_rsa`). */
  sshSecret: { annotation: 'hostflow.dev/ssh-secret', default: 'machine-config-ssh' },
  /** A Go duration; past it a drain fails with FailedToDrain (default 1h, as MCO). */
  drainTimeout: { annotation: 'hostflow.dev/drain-timeout', default: '1h' },
  /** A Go duration; past it a node not back on the image is Degraded (default 15m). */
  bootTimeout: { annotation: 'hostflow.dev/boot-timeout', default: '15m' },
} as const;

/**
 * Image labels preflight reads from the registry: the kubelet the image carries (hostflow's own
 * label), and the image it was built FROM (the OCI standard annotation, also set as a label by
 * image builders such as buildah and BuildKit).
 */
export const IMAGE_LABELS = {
  kubeletVersion: 'hostflow.dev/kubelet-version',
  baseName: 'org.opencontainers.image.base.name',
} as const;

/** The zone label nodes are updated in the order of, as MCO's node controller does. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

export const POOL_CONDITION = {
  updated: 'Updated',
  updating: 'Updating',
  degraded: 'Degraded',
} as const;

/**
 * hostflow's own condition on a pool labelled for its engine that it does not serve because the
 * MCO runs: written beside the MCO's conditions, never over them.
 */
export const POOL_NOT_SERVED = {
  type: 'hostflow.dev/Serving',
  reason: 'MachineConfigOperatorRuns',
} as const;

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }>;
}

export interface MachineConfigPoolSpec {
  nodeSelector?: LabelSelector;
  machineConfigSelector?: LabelSelector;
  /** An int or a percent of the pool ("20%"); default 1; 0 means 1. */
  maxUnavailable?: number | string;
  paused?: boolean;
}

export interface MachineConfigSpec {
  osImageURL?: string;
}

/** What a rollout needs to know of a Node of the pool. */
export interface PoolNode {
  name: string;
  zone: string;
  ready: boolean;
  unschedulable: boolean;
  currentImage?: string;
  desiredImage?: string;
  state?: NodeUpdateState;
}

export interface PoolStatusCounts {
  machineCount: number;
  updatedMachineCount: number;
  readyMachineCount: number;
  unavailableMachineCount: number;
  degradedMachineCount: number;
}
