// The BPA resources (bpa.akraino.org/v1alpha1, deploy/families/provisionings/) and the metal3
// BareMetalHost they draw hosts from: API coordinates and the fields hostflow reads. Written so
// the sample resources of Akraino ICN's BPA operator apply unchanged.
import type { MaintenanceWindowSpec } from './maintenance-window.js';

export const BPA_GROUP = 'bpa.akraino.org';
export const BPA_VERSION = 'v1alpha1';

export const PROVISIONING_API = {
  group: BPA_GROUP,
  version: BPA_VERSION,
  plural: 'provisionings',
} as const;
export const SOFTWARE_API = {
  group: BPA_GROUP,
  version: BPA_VERSION,
  plural: 'softwares',
} as const;
export const BPA_CLUSTER_API = {
  group: BPA_GROUP,
  version: BPA_VERSION,
  plural: 'clusters',
} as const;
export const BAREMETALHOST_API = {
  group: 'metal3.io',
  version: 'v1alpha1',
  plural: 'baremetalhosts',
} as const;

/** The label naming the cluster a Provisioning builds (required, as in the original). */
export const CLUSTER_LABEL = 'cluster';
/**
 * The original's second label: `virtlet-vm` had it take virtlet VM pods as hosts, which hostflow
 * does not provision (a Provisioning with it installs on BareMetalHosts, and is warned so).
 */
export const CLUSTER_TYPE_LABEL = 'cluster-type';
export const VIRTLET_CLUSTER_TYPE = 'virtlet-vm';
/** On a BareMetalHost: the feature labels resource matching reads (metal3 reports neither). */
export const HOST_FEATURE_LABELS = {
  sriov: 'bpa.akraino.org/sriov',
  qat: 'bpa.akraino.org/qat',
} as const;

/** On a BareMetalHost: how hostflow logs in to hand out a cluster's installer key. */
export const HOST_SSH_ANNOTATIONS = {
  /** A Secret in the host's namespace with the admin's private key under `id_rsa`. */
  secret: 'bpa.akraino.org/ssh-secret',
  /** The admin user (default root). */
  user: 'bpa.akraino.org/ssh-user',
  /**
   * The host's public SSH host key, one line in known_hosts form (`ssh-ed25519 AAAA…`), as the
   * platform team knows it: hostflow then accepts only that key, never trusting on first use.
   */
  hostKey: 'hostflow.dev/ssh-host-key',
} as const;
/** Holds a Provisioning until its hosts are reset and released. */
export const PROVISIONING_FINALIZER = 'bpa.akraino.org/provisioning';

/** One node of `spec.masters` / `spec.workers`: `{<label>: NodeRequirements}`. */
export interface NodeRequirements {
  'mac-address'?: string;
  cpu?: number;
  /** A Kubernetes quantity, e.g. `4Gi`. */
  memory?: string;
  sriov?: boolean;
  qat?: boolean;
}

export interface ProvisioningSpec {
  masters?: Array<Record<string, NodeRequirements>>;
  workers?: Array<Record<string, NodeRequirements>>;
  KUDPlugins?: string[];
  PodSubnet?: string;
  /**
   * The kubespray release to run (`v2.31.0`), one the worker has; the worker's first when unset.
   * A hostflow field: the original ran whatever checkout its image held.
   */
  kubesprayRelease?: string;
  /** Where the original wrote hosts.ini; accepted and ignored. */
  hostfile?: string;
  /** When its ClusterOperations may start (a hostflow field). */
  maintenanceWindow?: MaintenanceWindowSpec;
  /** How many ended ClusterOperations it keeps, with their logs (a hostflow field; default 10). */
  operationHistoryLimit?: number;
}

/** What role assignment needs to know of a BareMetalHost. */
export interface HostInventory {
  namespace: string;
  name: string;
  /** Lower case, colon separated. */
  nics: Array<{ mac: string; ip?: string }>;
  cpus?: number;
  ramMebibytes?: number;
  sriov: boolean;
  qat: boolean;
  /** `<namespace>/<name>` of the Provisioning it serves (its spec.consumerRef), if any. */
  consumer?: string;
  /**
   * Why no Provisioning may take it, when none may: another kind of consumer (a Metal3Machine,
   * say), or a metal3 provisioning state other than available. Never set for hosts it consumes.
   */
  unavailable?: string;
  /** A Secret (namespace/name, key id_rsa) with which hostflow logs in to hand out the installer key. */
  sshSecret?: string;
  sshUser?: string;
  /** Its annotation hostflow.dev/ssh-host-key, checked: `<type> <base64>`. */
  hostKey?: string;
  /** Why that annotation is not a host key, when it is not. */
  hostKeyProblem?: string;
}
/**
 * Where a Provisioning's BareMetalHosts were looked for: its own namespace, and the namespaces
 * whose names match the worker's HOSTFLOW_BAREMETAL_NAMESPACES (its patterns, as set).
 */
export interface HostNamespaces {
  own: string;
  allowed: string[];
}

/** The BareMetalHosts a Provisioning may see, and where they were looked for. */
export interface HostSearch {
  hosts: HostInventory[];
  searched: HostNamespaces;
}
/** On a Provisioning: `dhcp` takes node IPs from the DHCP server's leases instead of the hosts' NICs. */
export const IP_SOURCE_ANNOTATION = 'bpa.akraino.org/ip-source';
/**
 * On a Provisioning: set it to a new value (`hostflow retry provisioning` writes the time) to
 * resume a Failed one from the step that failed, or to look again at a Refused one.
 */
export const RETRY_ANNOTATION = 'hostflow.dev/retry';

/** What a Provisioning keeps next to itself, named after its cluster as the original did. */
export const installerKeySecretName = (cluster: string) => `${cluster}-ssh-key`;
/**
 * Holds the installer key's Secret until the Provisioning's clean-up has reset the hosts with it:
 * when the namespace is deleted, the namespace controller would delete the key first.
 */
export const INSTALLER_KEY_FINALIZER = 'hostflow.dev/installer-key';
export const kubeconfigSecretName = (cluster: string) => `${cluster}-kubeconfig`;

/** One package of a Software list: a name, or `{<name>: {version: <v>}}` to pin it. */
export type SoftwarePackage = string | Record<string, { version?: string | number } | null>;

export interface SoftwareSpec {
  masterSoftware?: SoftwarePackage[];
  workerSoftware?: SoftwarePackage[];
}

/** A BPA Cluster: the Provisioning and the Software (both in its namespace) it ties together. */
export interface BpaClusterSpec {
  provisioningCR?: string;
  softwareCR?: string;
}
/** Holds a Cluster until the Provisioning and Software it names are gone. */
export const BPA_CLUSTER_FINALIZER = 'bpa.akraino.org/cluster';

/** Which BPA resource: its uid tells it apart from a same-named successor. */
export type BpaKind = 'Software' | 'Cluster' | 'Provisioning';

export interface BpaRef {
  kind: BpaKind;
  namespace: string;
  name: string;
  uid: string;
}
