// A real kube-apiserver backed by etcd, with the kube-controller-manager that finishes what it
// starts, all built from the Go module proxy (deploy/kube-apiserver) and started here for
// `npm start` and for the tests alike.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { httpsOk } from './https-get.js';
import { installClusterResources } from './cluster-setup.js';
import { startKubeControllerManager } from './kube-controller-manager.js';
import { ensureCa, ensureCert, type LocalCa } from './pki.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';
import { freePort } from './ports.js';
import { REPO_ROOT } from './paths.js';
import { writeKubeconfig } from './kubeconfig-file.js';
import { runBuildScript } from './build-script.js';

/** The user of the local cluster's admin kubeconfig (kubectl's, and the tests' engine). */
export const LOCAL_ADMIN_USER = 'hostflow-admin';
/**
 * The user `npm start` runs the engine as (engine.kubeconfig): not kubectl's, so that the Lock
 * policies' engine exemption does not cover what a person does with kubectl.
 */
export const LOCAL_ENGINE_USER = 'hostflow-engine';

export interface KubeApiServer {
  url: string;
  kubeconfigPath: string;
  /** The same cluster as LOCAL_ENGINE_USER. */
  engineKubeconfigPath: string;
  /** Its CA (which signs the local node's certificates) and the Kubernetes binaries' folder. */
  ca: LocalCa;
  bin: string;
  stop(): Promise<void>;
}

export interface KubeApiServerOptions {
  /** Holds etcd data, PKI and the kubeconfig; reusing it resumes the same cluster. */
  stateDir: string;
  /** Fixed ports for `npm start`; random free ports when omitted (tests). */
  apiPort?: number;
  etcdPort?: number;
  /** Skip fsync in etcd: for throwaway test clusters only. */
  ephemeral?: boolean;
  logDir?: string;
  /** Restart etcd, the API server and the controller-manager whenever they exit (`hostflow start`). */
  restart?: boolean;
  /** Send audit events (deploy/locks/audit-policy.yaml) here: hostflow's lock-audit receiver. */
  audit?: LockAuditSink;
  /**
   * Installs the cluster's resources (cluster-setup.ts), exempting this engine identity from its
   * Locks, before the controller-manager starts. Its garbage collector learns new kinds only every
   * 30 s: until then it cannot resolve a TaskRun as an owner and backs off, for minutes, from the
   * Secrets a TaskRun owns and from a TaskRun deleted with orphan propagation. Without it (the
   * peer bench's harness, which installs only the CRDs it needs), the cluster starts bare.
   */
  resourcesFor?: string;
}

export interface LockAuditSink {
  /** e.g. http://127.0.0.1:7444/audit */
  url: string;
  /** Sent as a bearer token, so only the API server's events are counted. */
  token: string;
  /** The CA that signed the receiver's serving certificate. */
  caFile: string;
}

const AUDIT_POLICY = join(REPO_ROOT, 'deploy/locks/audit-policy.yaml');

/** The flags that send audit events to the sink, in batches of at most a second. */
function auditFlags(dir: string, sink: LockAuditSink | undefined): string[] {
  if (!sink) return [];
  const config = join(dir, 'audit-webhook.kubeconfig');
  writeFileSync(
    config,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'lock-audit',
          cluster: { server: sink.url, 'certificate-authority': sink.caFile },
        },
      ],
      users: [{ name: 'kube-apiserver', user: { token: sink.token } }],
      contexts: [
        { name: 'lock-audit', context: { cluster: 'lock-audit', user: 'kube-apiserver' } },
      ],
      'current-context': 'lock-audit',
    }),
    { mode: 0o600 },
  );
  return [
    `--audit-policy-file=${AUDIT_POLICY}`,
    `--audit-webhook-config-file=${config}`,
    '--audit-webhook-mode=batch',
    '--audit-webhook-batch-max-wait=1s',
    '--audit-webhook-initial-backoff=1s',
  ];
}

/** Builds (first time only, 10-20 minutes) and returns the directory holding both binaries. */
export async function ensureKubeBinaries(): Promise<string> {
  const [dir] = await runBuildScript('kube-apiserver', 'deploy/kube-apiserver/build.sh');
  return dir!;
}

export async function startKubeApiServer(options: KubeApiServerOptions): Promise<KubeApiServer> {
  const bin = await ensureKubeBinaries();
  const dir = options.stateDir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pki = join(dir, 'pki');
  const ca = await ensureCa(pki, 'hostflow kube CA');
  const serving = await ensureCert(ca, 'apiserver', {
    cn: 'kube-apiserver',
    ips: ['127.0.0.1'],
    dns: ['localhost'],
  });
  // For logs and exec through the local node's kubelet (local-stack/kubelet.ts).
  const kubeletClient = await ensureCert(ca, 'apiserver-kubelet-client', {
    cn: 'kube-apiserver-kubelet-client',
    o: 'system:masters',
    client: true,
  });
  const saKey = join(pki, 'sa.key');
  const saPub = join(pki, 'sa.pub');
  if (!existsSync(saKey)) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(saKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    writeFileSync(saPub, publicKey.export({ type: 'spki', format: 'pem' }));
  }
  const tokenFile = join(pki, 'tokens.csv');
  const tokens = ensureTokens(tokenFile, [LOCAL_ADMIN_USER, LOCAL_ENGINE_USER]);
  const token = tokens[LOCAL_ADMIN_USER]!;

  const etcdPort = options.etcdPort ?? (await freePort());
  const peerPort = await freePort();
  const apiPort = options.apiPort ?? (await freePort());
  const logFile = (name: string) =>
    options.logDir ? join(options.logDir, `${name}.log`) : undefined;

  const etcd = spawnManaged(
    'etcd',
    join(bin, 'etcd'),
    [
      '--name=hostflow',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=hostflow=http://127.0.0.1:${peerPort}`,
      '--listen-metrics-urls=',
      '--log-level=warn',
      ...(options.ephemeral ? ['--unsafe-no-fsync'] : []),
    ],
    { logFile: logFile('etcd'), restart: options.restart },
  );
  let apiserver: ManagedProcess | undefined;
  let controllers: ManagedProcess | undefined;
  const stop = async () => {
    await controllers?.stop();
    await apiserver?.stop();
    await etcd.stop();
  };
  try {
    await waitFor(
      'etcd health',
      async () => {
        const res = await fetch(`http://127.0.0.1:${etcdPort}/health`);
        return res.ok ? true : undefined;
      },
      { process: etcd },
    );

    apiserver = spawnManaged(
      'kube-apiserver',
      join(bin, 'kube-apiserver'),
      [
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        '--advertise-address=127.0.0.1',
        '--endpoint-reconciler-type=none',
        `--tls-cert-file=${serving.cert}`,
        `--tls-private-key-file=${serving.key}`,
        `--client-ca-file=${ca.cert}`,
        `--token-auth-file=${tokenFile}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        `--kubelet-client-certificate=${kubeletClient.cert}`,
        `--kubelet-client-key=${kubeletClient.key}`,
        '--kubelet-preferred-address-types=InternalIP',
        '--disable-admission-plugins=ServiceAccount',
        '--profiling=false',
        '--v=0',
        ...auditFlags(dir, options.audit),
      ],
      { logFile: logFile('kube-apiserver'), restart: options.restart },
    );
    const url = `https://127.0.0.1:${apiPort}`;
    const kubeconfigPath = join(dir, 'kubeconfig');
    const engineKubeconfigPath = join(dir, 'engine.kubeconfig');
    const to = (user: string, token: string) => ({
      server: url,
      caFile: ca.cert,
      user,
      credentials: { token },
    });
    writeKubeconfig(kubeconfigPath, to(LOCAL_ADMIN_USER, token));
    writeKubeconfig(engineKubeconfigPath, to(LOCAL_ENGINE_USER, tokens[LOCAL_ENGINE_USER]!));
    const server = apiserver;
    const get = (path: string) => httpsOk(`${url}${path}`, { caFile: ca.cert, token });
    await waitFor(
      'kube-apiserver readiness and namespace default',
      async () => ((await get('/api/v1/namespaces/default')) ? true : undefined),
      { timeoutMs: 90_000, intervalMs: 250, process: server },
    );
    if (options.resourcesFor !== undefined) {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      await installClusterResources(kc, options.resourcesFor);
    }
    controllers = await startKubeControllerManager({
      bin,
      apiUrl: url,
      ca,
      serviceAccountKey: saKey,
      dir,
      logFile: logFile('kube-controller-manager'),
      restart: options.restart,
    });
    // The serviceaccount controller's first write: its controllers reach the API and act.
    await waitFor(
      'kube-controller-manager to act (ServiceAccount default/default)',
      async () =>
        (await get('/api/v1/namespaces/default/serviceaccounts/default')) ? true : undefined,
      { timeoutMs: 60_000, intervalMs: 250, process: controllers },
    );
    return { url, kubeconfigPath, engineKubeconfigPath, ca, bin, stop };
  } catch (err) {
    await stop();
    throw new Error(`kube-apiserver: could not start: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * One bearer token per user (both cluster admins: locally the engine needs no less), kept
 * across restarts; a token file from before a user existed gains its line.
 */
function ensureTokens(file: string, users: string[]): Record<string, string> {
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  const tokens: Record<string, string> = {};
  for (const line of lines) {
    const [token, user] = line.split(',');
    if (token && user) tokens[user] = token;
  }
  const missing = users.filter((user) => !tokens[user]);
  for (const user of missing) {
    tokens[user] = randomBytes(24).toString('hex');
    lines.push(`${tokens[user]},${user},${user},system:masters`);
  }
  if (missing.length) writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return tokens;
}
