// A second, real cluster beside the shared one (its own etcd, kube-apiserver and
// controller-manager), bare until a test gives it what it needs: for what an engine does on a
// cluster unlike the shared one (another cluster's claim, a cluster without some CRDs).
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeApiServer, type KubeApiServer } from '../../local-stack/kube-apiserver.js';
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
