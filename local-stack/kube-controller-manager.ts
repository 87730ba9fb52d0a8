// The local cluster's kube-controller-manager (built with kube-apiserver, same release), so the
// stack finishes what the API server starts: deleted namespaces are emptied and go, dependents
// of a deleted owner are garbage-collected, PodDisruptionBudgets get a status the Eviction API
// reads, and ReplicaSets and Deployments make Pods. Started by startKubeApiServer.
import { join } from 'node:path';
import { httpsOk } from './https-get.js';
import { ensureCert, type LocalCa } from './pki.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';
import { writeKubeconfig } from './kubeconfig-file.js';

/**
 * Only the controllers whose work the stack needs; the defaults would also run node lifecycle
 * (which taints and evicts from the stand-in Nodes that no kubelet heartbeats), attach-detach
 * (which would take the tests' VolumeAttachments for its own) and more. No serviceaccount-token:
 * nothing here uses legacy token Secrets, and the controllers' own tokens come from the
 * TokenRequest API (--use-service-account-credentials).
 */
export const LOCAL_CONTROLLERS = [
  'namespace-controller',
  'garbage-collector-controller',
  'disruption-controller',
  'replicaset-controller',
  'deployment-controller',
  'serviceaccount-controller',
  // The runner Jobs (local-stack/kubelet.ts runs their Pods), and their clean-up once finished.
  'job-controller',
  'ttl-after-finished-controller',
] as const;

/** Its identity towards the API server: bound to system:kube-controller-manager by RBAC's defaults. */
const USER = 'system:kube-controller-manager';

export interface KubeControllerManagerOptions {
  /** The directory holding the kube-controller-manager binary (ensureKubeBinaries). */
  bin: string;
  /** The API server's URL and its CA, which also signs client and serving certificates. */
  apiUrl: string;
  ca: LocalCa;
  /** The API server's service-account signing key, so tokens it would sign verify. */
  serviceAccountKey: string;
  /** Holds its kubeconfig. */
  dir: string;
  logFile?: string;
  restart?: boolean;
}

export async function startKubeControllerManager(
  options: KubeControllerManagerOptions,
): Promise<ManagedProcess> {
  const { ca } = options;
  const client = await ensureCert(ca, 'controller-manager-client', { cn: USER, client: true });
  const serving = await ensureCert(ca, 'controller-manager', {
    cn: 'kube-controller-manager',
    ips: ['127.0.0.1'],
  });
  const kubeconfig = join(options.dir, 'controller-manager.kubeconfig');
  writeKubeconfig(kubeconfig, {
    server: options.apiUrl,
    caFile: ca.cert,
    user: USER,
    credentials: { 'client-certificate': client.cert, 'client-key': client.key },
  });
  // Only this stack probes it (healthz), so any free port does, even across `npm start`s.
  const port = await freePort();
  const kcm = spawnManaged(
    'kube-controller-manager',
    join(options.bin, 'kube-controller-manager'),
    [
      `--kubeconfig=${kubeconfig}`,
      `--controllers=${LOCAL_CONTROLLERS.join(',')}`,
      `--service-account-private-key-file=${options.serviceAccountKey}`,
      `--root-ca-file=${ca.cert}`,
      '--use-service-account-credentials=true',
      '--leader-elect=false', // one instance, and no Lease to wait out after a restart
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--tls-cert-file=${serving.cert}`,
      `--tls-private-key-file=${serving.key}`,
      '--profiling=false',
      '--v=0',
    ],
    { logFile: options.logFile, restart: options.restart },
  );
  try {
    await waitFor(
      'kube-controller-manager healthz',
      async () =>
        (await httpsOk(`https://127.0.0.1:${port}/healthz`, { caFile: ca.cert }))
          ? true
          : undefined,
      { timeoutMs: 60_000, intervalMs: 250, process: kcm },
    );
  } catch (err) {
    await kcm.stop();
    throw err;
  }
  return kcm;
}
