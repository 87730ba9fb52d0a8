// Where and how the runner Jobs run (activities/runner): the namespace, the image, the nodes,
// and the limits every run gets. Here, below both, so settings (runtime/) and the runner share it.
import { isIP } from 'node:net';

export interface RunnerSettings {
  /** The namespace the runner Jobs, their bundles and their network policies live in. */
  namespace: string;
  /** The runner image (deploy/runner-image): ansible, ssh, kubespray at /opt/kubespray/<name>. */
  image: string;
  /** Which nodes may run them (the local stack's node carries hostflow.dev/runner=true). */
  nodeSelector?: Record<string, string>;
  /** Requests and limits of the run's container; the limit of its /tmp as well. */
  resources: RunnerResources;
  /**
   * Every run's activeDeadlineSeconds. A ClusterOperation's own deadline is shorter, and its
   * workflow cancels the run (deleting the Job) when it passes.
   */
  deadlineSeconds: number;
  /** The most log a run may write; past it the run is stopped and fails naming the cap. */
  maxLogBytes: number;
  /** How long a run may wait for a node before it fails saying none can run it. */
  unschedulableSeconds: number;
  /** Addresses (CIDRs) runs may reach besides their cluster's nodes: package mirrors. */
  mirrors: Mirror[];
  /**
   * The ansible-core the image runs: each kubespray release is checked against it before any host
   * is touched. Known from the image's build, never by running ansible on the worker.
   */
  ansibleCore: string;
}

export interface Mirror {
  cidr: string;
  port: number;
}

export interface RunnerResources {
  cpuRequest: string;
  cpuLimit: string;
  memoryRequest: string;
  memoryLimit: string;
  /** The container's writable layer, its log and its /tmp together. */
  ephemeralStorageLimit: string;
}

export const DEFAULT_RUNNER_NAMESPACE = 'hostflow-runners';

/**
 * A mirror runs may reach, written `CIDR:port` (`10.0.5.0/24:443`, `fd00:5::/64:80`): the CIDR
 * with its prefix, the port after the last colon; or what is wrong with it.
 */
export function parseMirror(entry: string): Mirror | { problem: string } {
  const at = entry.lastIndexOf(':');
  const [cidr, portText] = [entry.slice(0, at), entry.slice(at + 1)];
  const [address = '', prefix = ''] = cidr.split('/');
  const family = isIP(address);
  const port = Number(portText);
  if (
    at < 0 ||
    !family ||
    !/^\d{1,3}$/.test(prefix) ||
    Number(prefix) > (family === 4 ? 32 : 128) ||
    !/^\d{1,5}$/.test(portText) ||
    port < 1 ||
    port > 65535
  ) {
    return {
      problem: `"${entry}" is not a mirror; expected CIDR:port, comma-separated, e.g. 10.0.5.0/24:443`,
    };
  }
  return { cidr, port };
}

/**
 * The label that marks a namespace for runners: the engine-rights policy lets the engine write its
 * runner bundles only in a namespace that carries it (`true`), which only a cluster admin can set.
 */
export const RUNNER_NAMESPACE_LABEL = 'hostflow.dev/runners';

/**
 * The ansible-core that deploy/requirements-kubespray.txt pins, which the runner image installs
 * (kubespray-real checks the pin and the image against it).
 */
export const RUNNER_ANSIBLE_CORE = '2.18.19';

export const DEFAULT_RUNNER_SETTINGS: Omit<RunnerSettings, 'image'> = {
  namespace: DEFAULT_RUNNER_NAMESPACE,
  resources: {
    cpuRequest: '100m',
    cpuLimit: '1',
    memoryRequest: '256Mi',
    memoryLimit: '1Gi',
    ephemeralStorageLimit: '1Gi',
  },
  // kubespray's cluster.yml takes 20-60 minutes on real hosts.
  deadlineSeconds: 3 * 3600,
  maxLogBytes: 64 << 20,
  unschedulableSeconds: 120,
  mirrors: [],
  ansibleCore: RUNNER_ANSIBLE_CORE,
};
