// How the workflow of each BPA resource is started, by the bridge or as a Cluster's child: its
// id, type, input, search attributes and what the UI says of it. Deterministic (workflow-safe).
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { KIND, SA } from './search-attributes.js';

export type BpaKind = 'Provisioning' | 'Software' | 'Cluster';

const TYPES = {
  Provisioning: {
    type: 'provisioningWorkflow',
    id: WORKFLOW_ID.provisioning,
    kind: KIND.provisioning,
  },
  Software: { type: 'softwareWorkflow', id: WORKFLOW_ID.software, kind: KIND.software },
  Cluster: { type: 'bpaClusterWorkflow', id: WORKFLOW_ID.bpaCluster, kind: KIND.bpaCluster },
} as const;

const DETAILS: Record<BpaKind, (cluster: string) => string> = {
  Provisioning: (cluster) =>
    `Installs cluster ${cluster} with kubespray on the BareMetalHosts it names, and resets them when it is deleted.`,
  Software: (cluster) =>
    `Installs its packages on every node of cluster ${cluster}, per role, once the cluster is Ready.`,
  Cluster: () =>
    'Runs the Provisioning and the Software it names as child workflows, aggregates their status, and deletes both when it is deleted.',
};

export function bpaWorkflowStart(kind: BpaKind, namespace: string, name: string, cluster?: string) {
  const { type, id, kind: searchKind } = TYPES[kind];
  return {
    workflowType: type,
    workflowId: id(namespace, name),
    args: [{ namespace, name }] as [{ namespace: string; name: string }],
    typedSearchAttributes: [
      { key: SA.kind, value: searchKind },
      { key: SA.namespace, value: namespace },
      { key: SA.name, value: name },
    ],
    staticSummary: `${kind} ${namespace}/${name}`,
    staticDetails: DETAILS[kind](cluster ?? '(no cluster label)'),
  };
}
