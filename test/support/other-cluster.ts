// A second, real cluster beside the shared one (its own etcd, kube-apiserver and
// controller-manager), bare until a test gives it what it needs: for what an engine does on a
// cluster unlike the shared one (another cluster's claim, a cluster without some CRDs).
import { CoreV1Api, KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installCrd } from '../../local-stack/cluster-setup.js';
import { startKubeApiServer, type KubeApiServer } from '../../local-stack/kube-apiserver.js';
import { REPO_ROOT } from '../../local-stack/paths.js';
import { HOST_CONFIG_NAME, LABELS } from '../../platform-config/contract.js';
import { testEnv } from './env.js';
import { rbacFor, renderManifests } from './manifests.js';
import { serviceAccountKubeconfig } from './service-account.js';

export interface OtherCluster {
  server: KubeApiServer;
  /** Its admin. */
  kc: KubeConfig;
  /** Where its components' logs, and those of engines run against it, go. */
  logDir: string;
}

/** Starts a second cluster; `name` names its log folder. */
export async function startOtherCluster(name: string): Promise<OtherCluster> {
  const logDir = join(testEnv('stateDir'), 'logs', name);
  mkdirSync(logDir, { recursive: true });
  const server = await startKubeApiServer({
    stateDir: mkdtempSync(join(tmpdir(), `hostflow-${name}-`)),
    logDir,
    ephemeral: true,
  });
  const kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfigPath);
  return { server, kc, logDir };
}

/**
 * Creates an overlay's accounts with exactly its RBAC on the cluster, moved into
 * `engineNamespace` (rbacFor), and nothing else of it; answers a kubeconfig per component.
 */
export async function overlayAccounts(
  cluster: OtherCluster,
  overlay: string,
  engineNamespace: string,
): Promise<(component: 'worker' | 'bridge') => Promise<string>> {
  const objects = KubernetesObjectApi.makeApiClient(cluster.kc);
  const rendered = await renderManifests(overlay);
  for (const object of rbacFor(rendered, { engineNamespace, otpNamespace: engineNamespace })) {
    await objects.create(object);
  }
  return (component) =>
    serviceAccountKubeconfig(cluster.kc, engineNamespace, `hostflow-${component}`);
}

/**
 * Of what hostflow serves, gives the cluster Tekton's TaskRuns and nothing else: the TaskRun CRD
 * (the local stack's stand-in), the tenant and engine namespaces, and a `host-config` in the
 * engine namespace that serves `linux/amd64` on the cluster itself.
 */
export async function serveLocalTaskRuns(
  cluster: OtherCluster,
  namespace: string,
  engineNamespace: string,
): Promise<void> {
  const core = cluster.kc.makeApiClient(CoreV1Api);
  await installCrd(cluster.kc, join(REPO_ROOT, 'local-stack/upstream-crds/tekton-taskrun.yaml'));
  for (const name of [namespace, engineNamespace]) {
    await core.createNamespace({ body: { metadata: { name } } });
  }
  await core.createNamespacedConfigMap({
    namespace: engineNamespace,
    body: {
      metadata: { name: HOST_CONFIG_NAME, labels: { [LABELS.multiPlatformConfig]: 'hosts' } },
      data: { 'local-platforms': 'linux/amd64' },
    },
  });
}
