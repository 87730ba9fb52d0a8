// The local kubelet's container runtime: Debian's containerd, run wholly from a folder of its
// own (root, state, sockets, runc's root, the CNI config and address store), so it shares
// nothing with a containerd the machine may run. Pods get addresses on a bridge of their own
// (POD_BRIDGE, POD_CIDR) and reach the host's routed networks (the SSH test hosts) through it.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';

const run = promisify(execFile);

/** Chosen to clash with nothing else the stack makes (netns.ts's hosts are on 10.231.0.0/16). */
export const POD_BRIDGE = 'hostflow-pods';
export const POD_CIDR = '10.232.0.0/24';
/** The pod sandbox image (deploy/kube-apiserver/pause), imported by kubelet-images.ts. */
export const PAUSE_IMAGE = 'localhost/hostflow-pause:1';
/** Kubernetes' containerd namespace: the CRI plugin sees only images imported into it. */
export const K8S_NAMESPACE = 'k8s.io';

export interface Containerd {
  /** unix:// endpoint for the kubelet. */
  endpoint: string;
  socket: string;
  process: ManagedProcess;
  /** `ctr` against this containerd, in Kubernetes' namespace. */
  ctr(args: string[]): Promise<string>;
}

export interface ContainerdPaths {
  dir: string;
  socket: string;
  /** runc's state: every container's, so a stale run's can be found and stopped. */
  runcRoot: string;
  /** Where the CNI bridge plugin's host-local IPAM keeps its leases. */
  ipamDir: string;
}

export function containerdPaths(dir: string): ContainerdPaths {
  return {
    dir,
    socket: join(dir, 'containerd.sock'),
    runcRoot: join(dir, 'runc'),
    ipamDir: join(dir, 'cni-ipam'),
  };
}

export async function startContainerd(options: {
  dir: string;
  /** Images and snapshots; in `dir` unless given (a folder kept across runs). */
  root?: string;
  logFile?: string;
  restart?: boolean;
}): Promise<Containerd> {
  const paths = containerdPaths(options.dir);
  const cniDir = join(options.dir, 'cni');
  for (const dir of [options.dir, cniDir, paths.ipamDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(cniDir, '10-hostflow-pods.conflist'), JSON.stringify(cniConfig(paths)));
  const config = join(options.dir, 'config.toml');
  writeFileSync(config, containerdConfig(paths, cniDir, options.root ?? join(options.dir, 'root')));
  const process = spawnManaged('containerd', 'containerd', ['--config', config], {
    logFile: options.logFile,
    restart: options.restart,
  });
  const ctr = async (args: string[]) => {
    const { stdout } = await run('ctr', ['--address', paths.socket, '-n', K8S_NAMESPACE, ...args], {
      maxBuffer: 16 << 20,
    });
    return stdout;
  };
  try {
    await waitFor(
      'containerd to answer',
      async () => ((await ctr(['version'])) ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        process,
      },
    );
  } catch (err) {
    await process.stop();
    throw err;
  }
  return { endpoint: `unix://${paths.socket}`, socket: paths.socket, process, ctr };
}

function containerdConfig(paths: ContainerdPaths, cniDir: string, root: string): string {
  const { dir } = paths;
  return `version = 2
root = "${root}"
state = "${join(dir, 'state')}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "${paths.socket}"
[ttrpc]
  address = "${paths.socket}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "${join(dir, 'opt')}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # This kind of machine drops CAP_SYS_RESOURCE: without it every sandbox fails in runc
  # ("can't get final child's PID from pipe"). Memory limits still hold.
  restrict_oom_score_adj = true
  # Pod network namespaces live here, not in /run/netns (ip netns list stays the stack's hosts').
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${paths.runcRoot}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${cniDir}"
`;
}

/** One bridge, host-local addresses, masqueraded out: a pod reaches what the host routes to. */
function cniConfig(paths: ContainerdPaths) {
  return {
    cniVersion: '1.0.0',
    name: POD_BRIDGE,
    plugins: [
      {
        type: 'bridge',
        bridge: POD_BRIDGE,
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: POD_CIDR }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: paths.ipamDir,
        },
      },
    ],
  };
}
