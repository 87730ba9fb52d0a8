// What a Provisioning must do to get from the cluster it has to the one its spec asks for, as a
// list of steps: install (hand out the key, cluster.yml, keep the outputs), or scale (remove-node.yml
// for workers dropped, the key and scale.yml for workers added). Pure: the workflow carries a plan
// out step by step, and a retry resumes a failed plan at the step that failed.
import type { ProvisioningSpec } from '../../shared/bpa-api.js';
import type { KeyHost } from '../../shared/contracts/provisioning.js';
import type { ProvisioningNode } from './nodes.js';

/** A cluster as installed: what a later spec is compared with. */
export interface InstalledCluster {
  cluster: string;
  nodes: ProvisioningNode[];
  podSubnet?: string;
  plugins: string[];
  /** The kubespray release it was installed with, when the Provisioning pinned one. */
  kubesprayRelease?: string;
}

export type StepKind =
  'reset.yml' | 'key' | 'cluster.yml' | 'remove-node.yml' | 'scale.yml' | 'outputs';

export interface PlanStep {
  kind: StepKind;
  /** In words, for the status's `step` and the UI. */
  what: string;
  /** The nodes it acts on (all of them for cluster.yml and the outputs). */
  nodes: ProvisioningNode[];
}

export interface Plan {
  /** `Installing` or `Scaling`: the phase while it runs. */
  phase: 'Installing' | 'Scaling';
  /** The nodes once it is done. */
  nodes: ProvisioningNode[];
  /** How the installer key reaches each of them. */
  keyHosts: KeyHost[];
  /** The cluster's settings, the same for every playbook. */
  podSubnet?: string;
  plugins: string[];
  kubesprayRelease?: string;
  steps: PlanStep[];
  /** Workers it adds and removes, for the Events. */
  added: string[];
  removed: string[];
}

const nodeKey = (node: ProvisioningNode) =>
  `${node.label}@${node.host.namespace}/${node.host.name}`;
const isMaster = (node: ProvisioningNode) => node.roles.includes('master');
const labels = (nodes: ProvisioningNode[]) => nodes.map((node) => node.label).join(', ');

/**
 * The first install of `nodes`. Nodes an earlier, failed try ran kubespray on and this one no
 * longer uses (`dropped`) are reset first, and then go back to the free hosts.
 */
export function planInstall(
  nodes: ProvisioningNode[],
  keyHosts: KeyHost[],
  spec: ProvisioningSpec,
  dropped: ProvisioningNode[] = [],
): Plan {
  const reset: PlanStep[] = dropped.length
    ? [{ kind: 'reset.yml', what: `Run kubespray reset.yml on ${labels(dropped)}`, nodes: dropped }]
    : [];
  return {
    phase: 'Installing',
    nodes,
    keyHosts,
    ...settings(spec),
    added: [],
    removed: [],
    steps: [
      ...reset,
      { kind: 'key', what: 'Hand out the installer key', nodes },
      { kind: 'cluster.yml', what: 'Run kubespray cluster.yml', nodes },
      { kind: 'outputs', what: 'Keep the kubeconfig and the IP map', nodes },
    ],
  };
}

const settings = (spec: ProvisioningSpec) => ({
  ...(spec.PodSubnet ? { podSubnet: spec.PodSubnet } : {}),
  plugins: spec.KUDPlugins ?? [],
  ...(spec.kubesprayRelease ? { kubesprayRelease: spec.kubesprayRelease } : {}),
});

/** `v2.31.0` and `2.31.0` pin the same release. */
const release = (pin: string | undefined) => pin?.replace(/^v/, '');

/**
 * Takes an installed cluster to `wanted`: workers come and go; what kubespray cannot change on a
 * live cluster (its masters, its name, its pod subnet and plugins) is refused, saying why.
 */
export function planScale(
  installed: InstalledCluster,
  wanted: {
    cluster: string;
    nodes: ProvisioningNode[];
    keyHosts: KeyHost[];
    spec: ProvisioningSpec;
  },
): { plan: Plan } | { problems: string[] } {
  const problems: string[] = [];
  if (wanted.cluster !== installed.cluster) {
    problems.push(
      `the label cluster is ${installed.cluster} since it was installed and cannot change: create a new Provisioning for ${wanted.cluster}`,
    );
  }
  const masters = (nodes: ProvisioningNode[]) =>
    nodes
      .filter(isMaster)
      .map((node) => `${nodeKey(node)}:${node.roles.join('+')}`)
      .join(', ');
  const noWorkersLeft = noWorkersProblem(installed.nodes, wanted.nodes);
  if (noWorkersLeft) {
    problems.push(noWorkersLeft);
  } else if (masters(installed.nodes) !== masters(wanted.nodes)) {
    problems.push(
      `the masters of an installed cluster cannot change (now ${masters(installed.nodes)}; asked ${masters(wanted.nodes)}): only workers are added and removed; delete and re-create the Provisioning to change its control plane`,
    );
  }
  if ((wanted.spec.PodSubnet || undefined) !== installed.podSubnet) {
    problems.push('PodSubnet of an installed cluster cannot change');
  }
  if ((wanted.spec.KUDPlugins ?? []).join(',') !== installed.plugins.join(',')) {
    problems.push('KUDPlugins of an installed cluster cannot change');
  }
  if (release(wanted.spec.kubesprayRelease) !== release(installed.kubesprayRelease)) {
    problems.push(
      'kubesprayRelease of an installed cluster cannot change: another release is an upgrade, which scaling does not do',
    );
  }
  if (problems.length) return { problems };

  const had = new Set(installed.nodes.map(nodeKey));
  const wants = new Set(wanted.nodes.map(nodeKey));
  const removed = installed.nodes.filter((node) => !wants.has(nodeKey(node)));
  const added = wanted.nodes.filter((node) => !had.has(nodeKey(node)));
  const steps: PlanStep[] = [];
  if (removed.length) {
    steps.push({
      kind: 'remove-node.yml',
      what: `Run kubespray remove-node.yml for ${labels(removed)}`,
      nodes: removed,
    });
  }
  if (added.length) {
    steps.push(
      { kind: 'key', what: `Hand out the installer key to ${labels(added)}`, nodes: added },
      { kind: 'scale.yml', what: `Run kubespray scale.yml for ${labels(added)}`, nodes: added },
    );
  }
  steps.push({ kind: 'outputs', what: 'Keep the IP map', nodes: wanted.nodes });
  return {
    plan: {
      phase: 'Scaling',
      nodes: wanted.nodes,
      keyHosts: wanted.keyHosts,
      ...settings(wanted.spec),
      steps,
      added: added.map((node) => node.label),
      removed: removed.map((node) => node.label),
    },
  };
}

/**
 * Why `wanted`, which removes every worker-only node, cannot be scaled to; undefined when it can,
 * or when it is not such a spec (the masters' comparison then says what changed). With no workers
 * the masters work too (roles.ts): refused only when masters that do not work now would, naming
 * them; masters that work already are scaled down to (issue 41).
 */
function noWorkersProblem(
  installed: ProvisioningNode[],
  wanted: ProvisioningNode[],
): string | undefined {
  const workers = installed.filter((node) => !isMaster(node));
  if (!workers.length || !wanted.every(isMaster)) return undefined;
  const fix = 'keep at least one worker, or delete and re-create the Provisioning';
  // The same masters, all working as none are left to (masters the spec also lists as workers
  // leave the others alone, and then the masters' comparison says what changed).
  const keys = (nodes: ProvisioningNode[]) => nodes.filter(isMaster).map(nodeKey).join(', ');
  const allWork = wanted.every((node) => node.roles.includes('worker'));
  if (keys(installed) !== keys(wanted) || !allWork) return undefined;
  const masterOnly = new Set(
    installed.filter((node) => !node.roles.includes('worker')).map(nodeKey),
  );
  const madeWorkers = wanted.filter((node) => masterOnly.has(nodeKey(node)));
  if (!madeWorkers.length) return undefined; // they work already: only the workers go
  const leaves = `${wanted.length === 1 ? 'master' : 'masters'} ${labels(wanted)}`;
  const become =
    madeWorkers.length === 1
      ? 'is a master only and would become a worker'
      : 'are masters only and would become workers';
  return (
    `removing every worker (${labels(workers)}) leaves ${leaves} alone, and a cluster without ` +
    `workers runs its workloads on its masters: ${labels(madeWorkers)} ${become} too, which an ` +
    `installed cluster cannot change: ${fix}`
  );
}

/** Nodes of `a` and `b`, each once, in that order. */
export function unionNodes(a: ProvisioningNode[], b: ProvisioningNode[]): ProvisioningNode[] {
  const seen = new Set(a.map(nodeKey));
  return [...a, ...b.filter((node) => !seen.has(nodeKey(node)))];
}

/** `nodes` without those of `gone`. */
export function withoutNodes(
  nodes: ProvisioningNode[],
  gone: ProvisioningNode[],
): ProvisioningNode[] {
  const drop = new Set(gone.map(nodeKey));
  return nodes.filter((node) => !drop.has(nodeKey(node)));
}
