// A real node for the local cluster: a kubelet and a kube-scheduler (v1.34.4, built with the API
// server) on Debian's containerd, so the runner Jobs that run every ansible play (and a tenant's
// scripts) are real Pods with real limits. One per machine (kubelet-claim.ts): `npm start` runs
// one with its stack; `npm test` runs one with the suite's API server, shared by every test file.
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { containerdPaths, PAUSE_IMAGE, startContainerd } from './containerd.js';
import { claimMachine, recordPids, releaseMachine } from './kubelet-claim.js';
import { hostLeftovers } from './kubelet-host.js';
import { importImage, pauseImageArchive } from './kubelet-images.js';
import { writeKubeconfig } from './kubeconfig-file.js';
import { ensureCert, type LocalCa } from './pki.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';
import { upsert } from './upsert.js';

const run = promisify(execFile);

/** The local node's name, and the label runner Jobs select it by (stand-in Nodes lack it). */
export const LOCAL_NODE = 'hostflow-runner';
export const RUNNER_NODE_LABEL = 'hostflow.dev/runner';

export interface LocalNode {
  name: string;
  /** What the stopped node left on the machine (kubelet-host.ts): empty when clean. */
  leftovers(): Promise<string[]>;
  /** Loads an image archive into the node's containerd (unless it has it already). */
  importImage(image: string, tar: string): Promise<void>;
  stop(): Promise<void>;
}

export interface LocalNodeOptions {
  /** The Kubernetes binaries (ensureKubeBinaries), pause included. */
  bin: string;
  apiUrl: string;
  ca: LocalCa;
  /** An admin kubeconfig: binds the node's and the scheduler's identities. */
  admin: KubeConfig;
  /** The node's own folder: kubelet root, containerd state, kubeconfigs. */
  dir: string;
  /**
   * Where containerd keeps images and snapshots, kept across runs so an image is imported once
   * per machine (only one containerd runs at a time: the claim).
   */
  imageDir: string;
  logDir?: string;
  restart?: boolean;
}

export async function startLocalNode(options: LocalNodeOptions): Promise<LocalNode> {
  const { dir } = options;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const kubeletRoot = join(dir, 'kubelet');
  const containerdDir = join(dir, 'containerd');
  const paths = containerdPaths(containerdDir);
  const claim = await claimMachine(dir, {
    mountRoots: [kubeletRoot, containerdDir, options.imageDir],
    runcRoot: paths.runcRoot,
    containerdSocket: paths.socket,
  });
  const logFile = (name: string) =>
    options.logDir ? join(options.logDir, `${name}.log`) : undefined;
  const started: ManagedProcess[] = [];
  const stop = async () => {
    for (const proc of started.reverse()) await proc.stop();
    const problems = await releaseMachine(claim);
    if (problems.length) console.error(`hostflow: the local node left: ${problems.join('; ')}`);
  };
  try {
    const containerd = await startContainerd({
      dir: containerdDir,
      root: options.imageDir,
      logFile: logFile('containerd'),
      restart: options.restart,
    });
    started.push(containerd.process);
    recordPids(
      claim,
      started.map((proc) => proc.pid),
    );
    await importImage(containerd, PAUSE_IMAGE, await pauseImageArchive(options.bin, PAUSE_IMAGE));
    await bindIdentities(options.admin);
    const nodeIp = await nodeAddress();
    const kubelet = spawnManaged(
      'kubelet',
      join(options.bin, 'kubelet'),
      [
        `--config=${await kubeletConfig(options, containerd.endpoint, nodeIp)}`,
        `--kubeconfig=${await clientKubeconfig(options, 'kubelet', `system:node:${LOCAL_NODE}`, 'system:nodes')}`,
        `--root-dir=${kubeletRoot}`,
        `--cert-dir=${join(dir, 'kubelet-pki')}`,
        `--hostname-override=${LOCAL_NODE}`,
        `--node-ip=${nodeIp}`,
        `--node-labels=${RUNNER_NODE_LABEL}=true`,
        '--v=0',
      ],
      { logFile: logFile('kubelet'), restart: options.restart },
    );
    started.push(kubelet);
    const scheduler = spawnManaged(
      'kube-scheduler',
      join(options.bin, 'kube-scheduler'),
      [
        `--kubeconfig=${await clientKubeconfig(options, 'scheduler', 'system:kube-scheduler')}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${await freePort()}`,
        '--profiling=false',
        '--v=0',
      ],
      { logFile: logFile('kube-scheduler'), restart: options.restart },
    );
    started.push(scheduler);
    recordPids(
      claim,
      started.map((proc) => proc.pid),
    );
    const core = options.admin.makeApiClient(CoreV1Api);
    await waitFor(
      `Node ${LOCAL_NODE} Ready`,
      async () => {
        const node = await core.readNode({ name: LOCAL_NODE });
        const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
        return ready?.status === 'True' ? true : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500, process: kubelet },
    );
    await untaint(core);
    return {
      name: LOCAL_NODE,
      leftovers: () => hostLeftovers(claim.dirs, claim.before),
      importImage: (image, tar) => importImage(containerd, image, tar),
      stop,
    };
  } catch (err) {
    await stop();
    throw new Error(`the local node (kubelet) could not start: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * RBAC's defaults leave the system:node role unbound (the Node authorizer serves kubelets in a
 * real cluster); the local node's identity gets it here. The scheduler's bindings are defaults.
 */
async function bindIdentities(admin: KubeConfig) {
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const body = {
    metadata: { name: 'hostflow-local-node' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node' },
    subjects: [
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `system:node:${LOCAL_NODE}` },
    ],
  };
  await upsert(
    () => rbac.readClusterRoleBinding({ name: body.metadata.name }),
    () => rbac.createClusterRoleBinding({ body }),
    (name, replaced) => rbac.replaceClusterRoleBinding({ name, body: replaced }),
    body,
    'ClusterRoleBinding hostflow-local-node',
  );
}

/**
 * A kubelet registers its Node tainted not-ready; the node lifecycle controller lifts the taint
 * once Ready. That controller does not run here (it would taint and evict from the stand-in Nodes
 * no kubelet serves), so the stack lifts it for its own node, once Ready.
 */
async function untaint(core: CoreV1Api) {
  const node = await core.readNode({ name: LOCAL_NODE });
  const taints = node.spec?.taints ?? [];
  const kept = taints.filter((taint) => taint.key !== 'node.kubernetes.io/not-ready');
  if (kept.length === taints.length) return;
  await core.replaceNode({
    name: LOCAL_NODE,
    body: { ...node, spec: { ...node.spec, taints: kept } },
  });
}

/**
 * The local node's address: the machine's default route's source (a loopback node address is
 * refused). Pods reach the machine there, so a service they call (the OTP service) listens on it.
 */
export async function nodeAddress(): Promise<string> {
  const { stdout } = await run('ip', ['-4', 'route', 'get', '192.0.2.255']).catch(() =>
    run('ip', ['-4', 'route', 'get', '1.1.1.1']),
  );
  const address = /\bsrc (\S+)/.exec(stdout)?.[1];
  if (!address)
    throw new Error(`no source address for the default route (ip route get: ${stdout})`);
  return address;
}

async function clientKubeconfig(
  options: LocalNodeOptions,
  name: string,
  user: string,
  group?: string,
): Promise<string> {
  const cert = await ensureCert(options.ca, `${name}-client`, { cn: user, o: group, client: true });
  const path = join(options.dir, `${name}.kubeconfig`);
  writeKubeconfig(path, {
    server: options.apiUrl,
    caFile: options.ca.cert,
    user,
    credentials: { 'client-certificate': cert.cert, 'client-key': cert.key },
  });
  return path;
}

async function kubeletConfig(
  options: LocalNodeOptions,
  endpoint: string,
  nodeIp: string,
): Promise<string> {
  const port = await freePort();
  const healthzPort = await freePort();
  const path = join(options.dir, 'kubelet-config.yaml');
  writeFileSync(
    path,
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      containerRuntimeEndpoint: endpoint,
      cgroupDriver: 'cgroupfs',
      // This machine has cgroup v1 controllers; 1.35 refuses them by default.
      failCgroupV1: false,
      failSwapOn: false,
      address: nodeIp,
      port,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort,
      podLogsDir: join(options.dir, 'pod-logs'),
      volumePluginDir: join(options.dir, 'volume-plugins'),
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: options.ca.cert },
      },
      authorization: { mode: 'Webhook' },
      // No cluster DNS here: pods resolve as the machine does.
      resolvConf: '/etc/resolv.conf',
      maxPods: 30,
      serializeImagePulls: false,
      // A runner's log is what the engine streams: kept whole up to its own cap.
      containerLogMaxSize: '20Mi',
      // At most this many processes in one pod: a Job spec has no field for it, so the node sets
      // it, as a real cluster's kubelets must for the runners (a tenant's fork bomb would
      // otherwise take the machine's PIDs, 32,768 here, from everything else on it). Ample for
      // ansible's forks and their ssh (test/hostile-tenant/runner-limits.test.ts).
      podPidsLimit: 256,
    }),
  );
  return path;
}
