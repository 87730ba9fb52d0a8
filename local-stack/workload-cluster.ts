// A Cluster API Cluster for the local API server's own cluster, in a namespace: what Cluster API
// core needs to run Machines there (docs/machines.md). Its infrastructure and control plane are
// stand-ins (capi-core/local-cluster.yaml), whose status this writes as their providers would: the
// infrastructure is provisioned, and the control plane, the local API server itself, is
// initialized and externally managed. The `<name>-kubeconfig` Secret lets Cluster API core reach
// the cluster's Nodes, as a control plane provider would write it.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { CLUSTER_API, CLUSTER_NAME_LABEL } from '../shared/machine-api.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import { waitFor } from './process.js';
import { upsertSecret } from './upsert.js';

export const LOCAL_CLUSTER = {
  group: 'infrastructure.local-stack.hostflow.dev',
  version: 'v1alpha1',
  plural: 'localclusters',
  kind: 'LocalCluster',
} as const;
export const LOCAL_CONTROL_PLANE = {
  group: 'controlplane.local-stack.hostflow.dev',
  version: 'v1alpha1',
  plural: 'localcontrolplanes',
  kind: 'LocalControlPlane',
} as const;

export interface WorkloadCluster {
  namespace: string;
  name: string;
  /** The kubeconfig file Cluster API core reaches the cluster with (the local admin's). */
  kubeconfigPath: string;
}

/** Creates the Cluster and what it names (idempotent), and waits until Cluster API core has it ready. */
export async function ensureWorkloadCluster(kc: KubeConfig, cluster: WorkloadCluster) {
  const { namespace, name } = cluster;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const server = new URL(kc.getCurrentCluster()!.server);
  const controlPlaneEndpoint = { host: server.hostname, port: Number(server.port || 443) };
  const create = async (
    api: { group: string; version: string; plural: string; kind: string },
    spec: object,
    status?: object,
  ) => {
    const { kind, ...coordinates } = api;
    await custom
      .createNamespacedCustomObject({
        ...coordinates,
        namespace,
        body: { apiVersion: `${api.group}/${api.version}`, kind, metadata: { name }, spec },
      })
      .catch((err: { code?: number }) => (err.code === 409 ? undefined : Promise.reject(err)));
    if (status)
      await custom.patchNamespacedCustomObjectStatus(
        { ...coordinates, namespace, name, body: { status } },
        MERGE_PATCH,
      );
  };
  await create(LOCAL_CLUSTER, { controlPlaneEndpoint }, { initialization: { provisioned: true } });
  await create(
    LOCAL_CONTROL_PLANE,
    { controlPlaneEndpoint },
    { initialization: { controlPlaneInitialized: true }, externalManagedControlPlane: true },
  );
  await upsertSecret(kc.makeApiClient(CoreV1Api), namespace, {
    metadata: { name: `${name}-kubeconfig`, labels: { [CLUSTER_NAME_LABEL]: name } },
    type: 'cluster.x-k8s.io/secret',
    data: { value: readFileSync(cluster.kubeconfigPath).toString('base64') },
  });
  const ref = (api: { group: string; kind: string }) => ({
    apiGroup: api.group,
    kind: api.kind,
    name,
  });
  await create(
    { ...CLUSTER_API, kind: 'Cluster' },
    { infrastructureRef: ref(LOCAL_CLUSTER), controlPlaneRef: ref(LOCAL_CONTROL_PLANE) },
  );
  await waitFor(
    `Cluster ${namespace}/${name} to have its infrastructure and control plane`,
    async () => {
      const seen = (await custom.getNamespacedCustomObject({
        ...CLUSTER_API,
        namespace,
        name,
      })) as {
        status?: {
          initialization?: {
            infrastructureProvisioned?: boolean;
            controlPlaneInitialized?: boolean;
          };
        };
      };
      const init = seen.status?.initialization;
      return init?.infrastructureProvisioned && init.controlPlaneInitialized ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}
