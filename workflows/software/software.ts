// One durable workflow per Software (`software/<ns>/<name>`): once the cluster it names is Ready,
// install the packages of each role on every node of that role over SSH, pinned as given, wait
// for each node's result and report it per node. A change to the lists, or a node that joins,
// installs the difference; a node that failed is tried again on a change or the retry annotation.
// Packages are never removed (neither did the original): a package dropped from a list stays.
import {
  allHandlersFinished,
  condition,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { PackageActivities } from '../../activities/ssh/packages.js';
import { RETRY_ANNOTATION } from '../../shared/bpa-api.js';
import { innermostMessage } from '../../shared/failures.js';
import {
  type SoftwareInput,
  softwareObserved,
  type ClusterNode,
  type SoftwareObservation,
} from '../../shared/contracts/software.js';
import { BpaStatus, type Condition } from '../kit/bpa-report.js';
import { parseSoftware, wantedOn, type RolePackages } from './packages.js';
import { MAX_HISTORY } from '../history-limit.js';
import { continueAsNewOnCurrentBuild, newBuildCurrent } from '../kit/new-build.js';

/**
 * Installing a node's packages takes as long as the package manager does; it heartbeats every
 * 10 seconds, so a lost worker is noticed in a minute. A host that is not reachable is tried a
 * few times; a package that cannot be installed fails at once.
 */
const packageInstall = proxyActivities<PackageActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
});

interface NodeResult {
  label: string;
  ip: string;
  installed: string[];
  error?: string;
}

/** What a node has been given, by `<label>@<ip>`: a node that comes back elsewhere starts over. */
type Installed = Map<string, Set<string>>;

/** What a Software workflow carries into its next run when it continues as new. */
export interface SoftwareCarried {
  latest: SoftwareObservation;
  installed: Record<string, string[]>;
}

export async function softwareWorkflow({
  namespace,
  name,
  carried,
}: SoftwareInput & { carried?: SoftwareCarried }): Promise<void> {
  let latest: SoftwareObservation | undefined = carried?.latest;
  let changes = 0;
  setHandler(softwareObserved, (seen) => {
    if (latest?.deleting) return;
    if (latest && !seen.deleting && seen.generation < latest.generation) return;
    if (JSON.stringify(seen) !== JSON.stringify(latest)) changes++;
    latest = seen;
  });
  await condition(() => latest !== undefined);
  const report = new BpaStatus({ kind: 'Software', namespace, name, uid: latest!.uid });
  const installed: Installed = new Map(
    Object.entries(carried?.installed ?? {}).map(([node, has]) => [node, new Set(has)]),
  );
  let handled = 0;
  for (;;) {
    await condition(() => changes !== handled || historyFull());
    if (changes === handled) {
      await condition(allHandlersFinished);
      const state = Object.fromEntries([...installed].map(([node, has]) => [node, [...has]]));
      await continueAsNewOnCurrentBuild<typeof softwareWorkflow>({
        namespace,
        name,
        carried: { latest: latest!, installed: state },
      });
    }
    handled = changes;
    const seen = latest!;
    if (seen.deleting) return; // nothing on the nodes is undone; the resource is going
    const scope = `${seen.generation}/${handled}`;
    const packages = parseSoftware(seen.spec);
    if (!seen.cluster || 'problems' in packages) {
      const problems = seen.cluster
        ? (packages as { problems: string[] }).problems
        : ['the label `cluster` is missing: it names the cluster to install on'];
      await phase(report, seen, 'Refused', 'Nothing was installed: fix the resource', {
        ready: ['False', 'Refused', problems.join('; ')],
      });
      await report.scopedEvent('Warning', 'Refused', problems.join('; '), scope);
      continue;
    }
    const view = seen.clusterView;
    if (view?.phase !== 'Ready') {
      const why = view
        ? `Provisioning ${view.provisioning} is ${view.phase || 'starting'}`
        : `no Provisioning in ${namespace} has the label cluster=${seen.cluster}`;
      await phase(
        report,
        seen,
        'WaitingForCluster',
        `waiting for cluster ${seen.cluster}: ${why}`,
        {
          ready: ['False', 'WaitingForCluster', why],
        },
      );
      continue;
    }
    await install(report, seen, view.nodes, packages, installed, scope);
  }
}

/** Installs what each node still lacks, all nodes at once; reports each node's outcome. */
async function install(
  report: BpaStatus,
  seen: SoftwareObservation,
  nodes: ClusterNode[],
  packages: RolePackages,
  installed: Installed,
  scope: string,
): Promise<void> {
  const key = (node: ClusterNode) => `${node.label}@${node.ip}`;
  for (const known of [...installed.keys()]) {
    if (!nodes.some((node) => key(node) === known)) installed.delete(known); // left the cluster
  }
  const todo = nodes
    .map((node) => {
      const has = installed.get(key(node)) ?? new Set<string>();
      return { node, missing: wantedOn(node, packages).filter((p) => !has.has(p)) };
    })
    .filter(({ missing }) => missing.length);
  const results = (): NodeResult[] =>
    nodes.map((node) => ({
      label: node.label,
      ip: node.ip,
      installed: [...(installed.get(key(node)) ?? [])].sort(),
      ...(errors.has(node.label) ? { error: errors.get(node.label)! } : {}),
    }));
  const errors = new Map<string, string>();
  if (todo.length) {
    await phase(
      report,
      seen,
      'Installing',
      `installing on ${todo.map(({ node, missing }) => `${node.label} (${missing.join(' ')})`).join(', ')}`,
      { ready: ['False', 'Installing', `installing on ${todo.length} node(s)`], nodes: results() },
    );
    await Promise.all(
      todo.map(async ({ node, missing }) => {
        try {
          await packageInstall.installPackages.executeWithOptions(
            { summary: `install ${missing.join(' ')} on ${node.label}` },
            [{ namespace: report.ref.namespace, cluster: seen.cluster!, node, packages: missing }],
          );
          const has = installed.get(key(node)) ?? new Set<string>();
          missing.forEach((p) => has.add(p));
          installed.set(key(node), has);
        } catch (err) {
          errors.set(node.label, innermostMessage(err));
        }
      }),
    );
  }
  const failed = [...errors.entries()];
  if (failed.length) {
    const message = failed.map(([, error]) => error).join('; ');
    await phase(
      report,
      seen,
      'Failed',
      `failed on ${failed.map(([label]) => label).join(', ')}: fix the cause, then change the Software or set the annotation ${RETRY_ANNOTATION}`,
      { ready: ['False', 'InstallFailed', message], nodes: results() },
    );
    for (const [label, error] of failed)
      await report.scopedEvent('Warning', 'InstallFailed', error, `${scope}/${label}`);
    return;
  }
  const message = `installed on ${nodes.length} node(s) of cluster ${seen.cluster}`;
  const changed = await phase(report, seen, 'Installed', message, {
    ready: ['True', 'Installed', message],
    nodes: results(),
  });
  if (changed && todo.length) await report.scopedEvent('Normal', 'Installed', message, scope);
}

async function phase(
  report: BpaStatus,
  seen: SoftwareObservation,
  phaseName: string,
  details: string,
  extra: { ready: [Condition['status'], string, string]; nodes?: NodeResult[] },
): Promise<boolean> {
  const [status, reason, message] = extra.ready;
  report.about('clusterName', seen.cluster);
  return report.status(`${phaseName}. ${details}`, {
    phase: phaseName,
    observedGeneration: seen.generation,
    ...(extra.nodes ? { nodes: extra.nodes } : {}),
    conditions: [{ type: 'Ready', status, reason, message }],
  });
}

const historyFull = () =>
  workflowInfo().continueAsNewSuggested ||
  workflowInfo().historyLength > MAX_HISTORY.software ||
  newBuildCurrent();
