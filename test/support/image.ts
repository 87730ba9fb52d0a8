// hostflow's processes run from its container image (deploy/image), the way the production
// manifests (deploy/base) run them: each Deployment's arguments, environment and volumes, as
// uid 1000 on a read-only root filesystem with no capabilities. What differs is only where things
// are: the container shares the machine's network (the local stack and the SSH test hosts live
// there), so each process listens on a free port of 127.0.0.1, and a kubeconfig stands in for the
// ServiceAccount token.
import { KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../local-stack/paths.js';
import { spawnManaged, waitFor, type ManagedProcess } from '../../local-stack/process.js';
import { ofKind, renderManifests, type Manifest } from './manifests.js';
import { testEnv } from './env.js';

const run = promisify(execFile);
const CONTAINERS = join(REPO_ROOT, 'deploy/image/containers.sh');
export const IMAGE = process.env.HOSTFLOW_IMAGE ?? 'localhost/hostflow:dev';

/** podman as deploy/image/containers.sh runs it (runc, cgroupfs, hostflow's vfs storage). */
export async function podman(args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run('bash', [CONTAINERS, 'podman', ...args], { maxBuffer: 16 << 20 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`podman ${args.join(' ')}: ${e.stderr || e.message}`, { cause: err });
  }
}

/** Builds the image when its inputs changed (deploy/image/build.sh); quick when it is current. */
export async function buildImage(): Promise<string> {
  const { stderr } = await run('bash', [join(REPO_ROOT, 'deploy/image/build.sh')], {
    maxBuffer: 64 << 20,
    env: { ...process.env, HOSTFLOW_IMAGE: IMAGE },
  }).catch((err: unknown) => {
    const e = err as { stderr?: string; message: string };
    throw new Error(`deploy/image/build.sh failed: ${e.stderr || e.message}`, { cause: err });
  });
  return stderr;
}

interface Container {
  name: string;
  args?: string[];
  env?: Array<{ name: string; value?: string }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
  securityContext?: { readOnlyRootFilesystem?: boolean; capabilities?: { drop?: string[] } };
}
interface Volume {
  name: string;
  emptyDir?: object;
  secret?: {
    secretName: string;
    optional?: boolean;
    items?: Array<{ key: string; path: string }>;
  };
}
interface DeploymentSpec {
  spec: {
    template: {
      spec: {
        containers: Container[];
        volumes?: Volume[];
        securityContext?: { runAsUser?: number; runAsGroup?: number };
      };
    };
  };
}

/** How a Deployment of deploy/base runs its one container. */
export interface Workload {
  /** The Deployment's or the Job's name. */
  name: string;
  args: string[];
  /** Its env and the ConfigMaps it takes env from (Secrets' come from the test). */
  env: Record<string, string>;
  emptyDirs: string[];
  /** mount path → the Secret's keys (or items) it shows there. */
  secretMounts: Array<{ path: string; secret: string; optional: boolean; items?: string[] }>;
  runAs: string;
  readOnlyRoot: boolean;
  dropsAll: boolean;
}

/** The Deployments and Jobs of a kustomization under deploy/, as the image runs their pods. */
export async function deployedWorkloads(dir = 'deploy/base'): Promise<Record<string, Workload>> {
  const objects = await renderManifests(dir);
  const configMaps = ofKind(objects, 'ConfigMap');
  const workloads: Record<string, Workload> = {};
  for (const deployment of [...ofKind(objects, 'Deployment'), ...ofKind(objects, 'Job')]) {
    const pod = (deployment as Manifest & DeploymentSpec).spec.template.spec;
    const [container] = pod.containers;
    if (!container || pod.containers.length !== 1)
      throw new Error(`${deployment.metadata.name}: expected one container`);
    const env: Record<string, string> = {};
    for (const from of container.envFrom ?? []) {
      if (!from.configMapRef) continue;
      const prefix = from.configMapRef.name;
      // configMapGenerator appends a content hash to the name.
      const map = configMaps.find(
        (m) => m.metadata.name === prefix || m.metadata.name.startsWith(`${prefix}-`),
      );
      if (!map) throw new Error(`${deployment.metadata.name}: no ConfigMap ${prefix}`);
      Object.assign(env, (map as Manifest & { data?: Record<string, string> }).data);
    }
    for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
    const emptyDirs: string[] = [];
    const secretMounts: Workload['secretMounts'] = [];
    for (const mount of container.volumeMounts ?? []) {
      const volume = volumes.get(mount.name);
      if (volume?.emptyDir) emptyDirs.push(mount.mountPath);
      else if (volume?.secret)
        secretMounts.push({
          path: mount.mountPath,
          secret: volume.secret.secretName,
          optional: volume.secret.optional ?? false,
          items: volume.secret.items?.map((i) => i.key),
        });
      else
        throw new Error(
          `${deployment.metadata.name}: volume ${mount.name} is of a kind not run here`,
        );
    }
    const sc = pod.securityContext ?? {};
    workloads[deployment.metadata.name] = {
      name: deployment.metadata.name,
      args: container.args ?? [],
      env,
      emptyDirs,
      secretMounts,
      runAs: `${sc.runAsUser ?? ''}:${sc.runAsGroup ?? ''}`,
      readOnlyRoot: container.securityContext?.readOnlyRootFilesystem === true,
      dropsAll: container.securityContext?.capabilities?.drop?.includes('ALL') === true,
    };
  }
  return workloads;
}

/**
 * A Secret volume's files as the kubelet shows them to a pod with fsGroup 1000: one file per key,
 * readable by the pod's user only. `files` maps the Secret's keys to files on this machine.
 */
export function secretVolume(dir: string, files: Record<string, string>, items?: string[]): string {
  mkdirSync(dir, { recursive: true });
  for (const [key, source] of Object.entries(files)) {
    if (items && !items.includes(key)) continue;
    const path = join(dir, key);
    writeFileSync(path, readFileSync(source));
    chownSync(path, 1000, 1000);
    chmodSync(path, 0o400);
  }
  chownSync(dir, 1000, 1000);
  chmodSync(dir, 0o500);
  return dir;
}

/**
 * The test cluster's kubeconfig with its CA inlined, as one file a container can read: its
 * stand-in for the ServiceAccount token and CA a pod gets.
 */
export function containerKubeconfig(dir: string): string {
  const kc = new KubeConfig();
  kc.loadFromFile(testEnv('kubeconfig'));
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user?.token) throw new Error('the test kubeconfig has no cluster or token');
  const ca = cluster.caData ?? readFileSync(cluster.caFile!).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'test', cluster: { server: cluster.server, 'certificate-authority-data': ca } },
    ],
    users: [{ name: 'test', user: { token: user.token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'test' } }],
    'current-context': 'test',
  };
  const file = join(dir, 'kubeconfig');
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, JSON.stringify(config));
  return file;
}

export interface ImageProcess extends ManagedProcess {
  /** The container's name, for `podman inspect` and `podman exec`. */
  container: string;
}

/**
 * Runs a workload from the image: `podman run` in the foreground (its output is the process's),
 * removed when it exits. `env` adds to or overrides the workload's; `mounts` are read-only binds
 * (container path → directory here) for its Secret volumes and anything else it needs.
 */
export async function runWorkload(
  workload: Workload,
  options: {
    container: string;
    env: Record<string, string>;
    mounts: Record<string, string>;
    readyLine: string;
    logFile: string;
  },
): Promise<ImageProcess> {
  const args = [
    'run',
    '--rm',
    '--pull=never',
    `--name=${options.container}`,
    '--network=host',
    `--user=${workload.runAs}`,
    ...(workload.readOnlyRoot ? ['--read-only'] : []),
    ...(workload.dropsAll ? ['--cap-drop=all'] : []),
    // allowPrivilegeEscalation: false
    '--security-opt=no-new-privileges',
    ...workload.emptyDirs.map((path) => `--tmpfs=${path}:rw,mode=1777`),
    ...Object.entries(options.mounts).map(([path, dir]) => `--volume=${dir}:${path}:ro`),
    ...Object.entries({ ...workload.env, ...options.env }).map(([k, v]) => `--env=${k}=${v}`),
    IMAGE,
    ...workload.args,
  ];
  const proc = spawnManaged(options.container, 'bash', [CONTAINERS, 'podman', ...args], {
    logFile: options.logFile,
  });
  const removeContainer = () =>
    podman(['rm', '--force', '--ignore', '--time=0', options.container]).then(() => undefined);
  const started: ImageProcess = {
    ...proc,
    name: proc.name,
    get pid() {
      return proc.pid;
    },
    container: options.container,
    // SIGTERM reaches the process through podman and tini; the container goes with --rm, or
    // here when podman itself had to be killed.
    async stop(graceMs = 30_000) {
      await proc.stop(graceMs);
      await removeContainer();
    },
  };
  try {
    await waitFor(
      `${options.container} (from ${IMAGE}) to start`,
      () => (proc.tail(50).includes(options.readyLine) ? true : undefined),
      { process: proc, timeoutMs: 120_000 },
    );
  } catch (err) {
    await started.stop(5000);
    throw err;
  }
  return started;
}

/** `podman inspect` of a running container: what it runs and how. */
export async function inspectContainer(container: string): Promise<{
  image: string;
  user: string;
  readOnlyRoot: boolean;
  running: boolean;
  args: string[];
}> {
  const { stdout } = await podman(['inspect', '--type=container', container]);
  const [c] = JSON.parse(stdout) as Array<{
    ImageName: string;
    Args: string[];
    State: { Running: boolean };
    Config: { User: string };
    HostConfig: { ReadonlyRootfs: boolean };
  }>;
  if (!c) throw new Error(`no container ${container}`);
  return {
    image: c.ImageName,
    user: c.Config.User,
    readOnlyRoot: c.HostConfig.ReadonlyRootfs,
    running: c.State.Running,
    args: c.Args,
  };
}

/** Runs a command in a running container as its user; resolves with its exit code and output. */
export async function execIn(
  container: string,
  command: string[],
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [CONTAINERS, 'podman', 'exec', container, ...command],
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        resolve({
          code: err ? (typeof code === 'number' ? code : -1) : 0,
          output: `${stdout}${stderr}`,
        });
      },
    );
  });
}
