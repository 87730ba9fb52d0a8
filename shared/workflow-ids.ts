// hostflow's workflow IDs: one workflow per resource (and per engine namespace for the singletons),
// so that the ID itself dedupes starts, finds a resource's workflow, and names it in the UI
// (docs/architecture.md, "Temporal conventions"). hostflow's own, not the original's contract.

export const WORKFLOW_ID = {
  taskRun: (namespace: string, name: string, uid: string) => `taskrun/${namespace}/${name}/${uid}`,
  allocator: (platform: string) => `allocator/${platform}`,
  provisioning: (namespace: string, name: string) => `provisioning/${namespace}/${name}`,
  software: (namespace: string, name: string) => `software/${namespace}/${name}`,
  /** A ClusterOperation's runs, children of its Provisioning's workflow. */
  clusterOperation: (namespace: string, name: string) => `cluster-operation/${namespace}/${name}`,
  bpaCluster: (namespace: string, name: string) => `bpa-cluster/${namespace}/${name}`,
  /** A Cluster API Machine's infrastructure: one HostflowMachine. */
  hostflowMachine: (namespace: string, name: string) => `hostflow-machine/${namespace}/${name}`,
  rollout: (pool: string) => `rollout/${pool}`,
  /** One node's update to one image: its own history, found by the node's name. */
  rolloutNode: (pool: string, node: string, imageDigest: string) =>
    `rollout/${pool}/${node}/${imageDigest}`,
  hostConfig: (engineNamespace: string) => `hostconfig/${engineNamespace}`,
  cloudGc: (engineNamespace: string) => `cloud-gc/${engineNamespace}`,
  taskRunGc: (engineNamespace: string) => `taskrun-gc/${engineNamespace}`,
} as const;

/** The TaskRun a `taskrun/<namespace>/<name>/<uid>` workflow id names. */
export function parseTaskRunWorkflowId(
  workflowId: string,
): { namespace: string; name: string; uid: string } | undefined {
  const parts = workflowId.split('/');
  if (parts.length !== 4 || parts[0] !== 'taskrun') return undefined;
  return { namespace: parts[1]!, name: parts[2]!, uid: parts[3]! };
}
