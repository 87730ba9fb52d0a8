// The Provisioning workflow's contract (`provisioning/<ns>/<name>`): its input, what the bridge
// tells it, what its activities are asked about, and how it is started, by the bridge or as a
// BPA Cluster's child.
import { defineSignal } from '@temporalio/workflow';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import type { ProvisioningSpec } from '../bpa-api.js';
import { KIND } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';

/** Which Provisioning: its uid tells it apart from a same-named successor. */
export interface ProvisioningRef {
  namespace: string;
  name: string;
  uid: string;
}

export interface ProvisioningInput {
  namespace: string;
  name: string;
  /** Events a run's history may reach before it continues as new (default 2,000; at least 10). */
  maxHistory?: number;
  /** What an earlier run knew (its cluster, hosts, plan), carried across continue-as-new. */
  carried?: unknown;
}

export type ProvisioningWorkflow = (input: ProvisioningInput) => Promise<void>;

/** What the bridge saw of a Provisioning: its spec at a generation, or that it is going away. */
export interface ProvisioningObservation {
  uid: string;
  generation: number;
  /** Its `cluster` label. */
  cluster?: string;
  /** Its `cluster-type` label, when it has one (absent in what older bridges sent). */
  clusterType?: string;
  spec: ProvisioningSpec;
  /** Where node IPs come from: the hosts' NIC status, or the DHCP server's leases. */
  ipSource: 'nic' | 'dhcp';
  /** Its deletionTimestamp is set (or it is gone): reset, release, and let it go. */
  deleting: boolean;
  /** Its retry annotation: a new value resumes a failed run (RETRY_ANNOTATION). */
  retry?: string;
}

export const provisioningObserved = defineSignal<[ProvisioningObservation]>('provisioningObserved');

/** How the installer key reaches a node's host: its admin login, and the host key it was given. */
export interface KeyHost {
  label: string;
  address: string;
  user: string;
  /** `<namespace>/<name>` of the Secret with the admin's key (id_rsa). */
  sshSecret: string;
  /** The host key its BareMetalHost gives: the only one accepted. */
  hostKey?: GivenHostKey;
}

/** The kubespray entry points hostflow runs: a Provisioning's own, and its operations' upgrade. */
export const PLAYBOOKS = [
  'cluster.yml',
  'scale.yml',
  'remove-node.yml',
  'reset.yml',
  'upgrade-cluster.yml',
] as const;
export type Playbook = (typeof PLAYBOOKS)[number];

export function provisioningStart(
  namespace: string,
  name: string,
  cluster?: string,
  maxHistory?: number,
): WorkflowStart<ProvisioningWorkflow> {
  return {
    workflowType: 'provisioningWorkflow',
    workflowId: WORKFLOW_ID.provisioning(namespace, name),
    args: [{ namespace, name, ...(maxHistory ? { maxHistory } : {}) }],
    typedSearchAttributes: objectAttributes(KIND.provisioning, { namespace, name }),
    staticSummary: `Provisioning ${namespace}/${name}`,
    staticDetails: `Installs cluster ${cluster ?? '(no cluster label)'} with kubespray on the BareMetalHosts it names, and resets them when it is deleted.`,
  };
}
