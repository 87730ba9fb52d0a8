// One Temporal namespace serves one Kubernetes cluster (docs/deploy.md, "One Temporal namespace
// per cluster"). Workflow ids name what they serve within a cluster only (`allocator/<platform>`,
// `rollout/<pool>`, `hostconfig/<namespace>`), so the engines of two clusters on one namespace
// would signal each other's workflows and serve each other's builds. At start, the worker and the
// bridge claim their namespace for their cluster, known by the uid of its `kube-system` namespace
// (which no other cluster has), and refuse to start when another cluster holds it.
//
// The claim is a Temporal schedule that never runs (paused, with no times): it needs no more
// rights than starting workflows, is kept for as long as the namespace is (no retention ends it),
// shows in the UI with a note that says what it is, and two engines that race to claim an empty
// namespace cannot both win (creating it fails for the second).
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';

export const CLAIM_SCHEDULE_ID = 'hostflow-cluster-claim';

/** A Kubernetes cluster as the claim knows it. */
export interface ClusterIdentity {
  /** The uid of its `kube-system` namespace. */
  uid: string;
  /** Its API server, as the engine's kubeconfig names it: for people, not compared. */
  server: string;
}

/** The cluster the engine's kubeconfig reaches. */
export async function clusterIdentity(kc: KubeConfig, core: CoreV1Api): Promise<ClusterIdentity> {
  const server = kc.getCurrentCluster()?.server ?? '(unknown API server)';
  let uid: string | undefined;
  try {
    uid = (await core.readNamespace({ name: 'kube-system' })).metadata?.uid;
  } catch (err) {
    throw new Error(
      `cannot read the kube-system namespace of ${server} to know which cluster this engine ` +
        `serves: ${(err as Error).message} (the engine's role needs get on namespaces/kube-system)`,
      { cause: err },
    );
  }
  if (!uid) throw new Error(`the kube-system namespace of ${server} has no uid`);
  return { uid, server };
}

/** Another cluster's engine holds the namespace: this one must not start. */
export class NamespaceClaimedError extends Error {}

/**
 * Claims `namespace` for `cluster`, or finds it claimed for the same cluster; throws
 * NamespaceClaimedError, naming both clusters and what to do, when another cluster holds it.
 */
export async function claimNamespace(
  client: Client,
  namespace: string,
  cluster: ClusterIdentity,
  taskQueue: string,
): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: CLAIM_SCHEDULE_ID,
      // Never runs: no times, and paused. The action must name a workflow; none has this type.
      spec: {},
      action: {
        type: 'startWorkflow',
        workflowType: 'hostflowClusterClaimNeverRuns',
        workflowId: `${CLAIM_SCHEDULE_ID}-never-runs`,
        taskQueue,
        args: [],
      },
      memo: { kubernetesClusterUid: cluster.uid, apiServer: cluster.server },
      state: {
        paused: true,
        note:
          `hostflow: Temporal namespace ${namespace} serves Kubernetes cluster ${cluster.uid} ` +
          `(${cluster.server}) only. Never runs; delete it only to move the namespace to ` +
          'another cluster, once that cluster has taken over every workflow.',
      },
    });
    return;
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) {
      throw new Error(
        `cannot claim Temporal namespace ${namespace} for this cluster (the schedule ` +
          `${CLAIM_SCHEDULE_ID}): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
  const { memo } = await client.schedule.getHandle(CLAIM_SCHEDULE_ID).describe();
  const holder = memo?.kubernetesClusterUid;
  if (holder === cluster.uid) return;
  const held = `${String(holder ?? '(no uid)')} (${String(memo?.apiServer ?? 'API server unknown')})`;
  throw new NamespaceClaimedError(
    `Temporal namespace ${namespace} serves Kubernetes cluster ${held}, and this engine runs ` +
      `for cluster ${cluster.uid} (${cluster.server}): the engines of two clusters on one ` +
      `namespace would signal each other's workflows. Give this engine a namespace of its own ` +
      `(TEMPORAL_NAMESPACE), or, to move the namespace to this cluster for good, stop the other ` +
      `cluster's engine and delete the schedule ${CLAIM_SCHEDULE_ID} ` +
      `(temporal schedule delete --schedule-id ${CLAIM_SCHEDULE_ID} --namespace ${namespace}).`,
  );
}

/**
 * The worker's and the bridge's start: finds the cluster the engine's kubeconfig reaches and
 * claims the engine's Temporal namespace for it, or throws, refusing to start.
 */
export async function claimNamespaceForEngine(
  client: Client,
  kube: { kc: KubeConfig; core: CoreV1Api },
  settings: { TEMPORAL_NAMESPACE: string; HOSTFLOW_TASK_QUEUE: string },
): Promise<ClusterIdentity> {
  const cluster = await clusterIdentity(kube.kc, kube.core);
  await claimNamespace(client, settings.TEMPORAL_NAMESPACE, cluster, settings.HOSTFLOW_TASK_QUEUE);
  return cluster;
}
