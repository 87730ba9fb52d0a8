// One durable workflow per Provisioning (`provisioning/<ns>/<name>`), the seed's BPA as a
// narrative: assign roles from the BareMetalHosts, find each node's IP, hand out the installer
// key, write the kubespray inventory, run kubespray to the end, keep the kubeconfig. Each step
// shows in the UI's details and in the resource's status. On delete: reset the hosts, release
// them, remove what was created, then the finalizer. What can never work is refused with the
// reason before anything runs; a failed install stays Failed, hosts kept, until the spec changes.
import { condition, log, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import type { PlaybookOutcome } from '../../activities/ansible/playbook.js';
import type { HostInventory } from '../../shared/bpa-api.js';
import { innermostMessage } from '../../shared/failures.js';
import { provisioningObserved, type ProvisioningObservation } from '../../shared/messages.js';
import type { ProvisioningInput } from '../../shared/types.js';
import { dhcp, installerKey, kubespray, provisioningKube as kube } from '../activities.js';
import { renderGroupVars, renderInventory, type InventoryNode } from './inventory.js';
import { assignRoles, type AssignedNode } from './roles.js';

const USER = /^[a-z_][a-z0-9_-]{0,31}$/;
const IP = /^(\d{1,3}\.){3}\d{1,3}$|^[0-9a-fA-F:]+$/;

export async function provisioningWorkflow({ namespace, name }: ProvisioningInput): Promise<void> {
  let latest: ProvisioningObservation | undefined;
  setHandler(provisioningObserved, (seen) => {
    if (!latest || seen.deleting || seen.generation > latest.generation) latest = seen;
  });
  await condition(() => latest !== undefined);
  const ref = { namespace, name, uid: latest!.uid };
  const consumer = `${namespace}/${name}`;
  let handled = 0;
  let claimed = false;
  let cluster = latest!.cluster ?? '';
  /** The nodes of the last install started: what a delete resets. */
  let nodes: Array<AssignedNode & InventoryNode> = [];
  let installed = false;

  const step = async (phase: string, what: string, extra: Record<string, unknown> = {}) => {
    setCurrentDetails(`**${consumer}** (cluster ${cluster || '?'}): ${phase}. ${what}`);
    await kube.writeProvisioningStatus({ ref, status: { phase, step: what, ...extra } });
  };
  const event = (type: 'Normal' | 'Warning', reason: string, message: string) =>
    kube.recordProvisioningEvent({ ref, type, reason, message, dedupKey: `${handled}/${reason}` });
  const ready = (status: 'True' | 'False', reason: string, message: string) => ({
    conditions: [
      {
        type: 'Ready',
        status,
        reason,
        message,
        observedGeneration: handled,
        lastTransitionTime: new Date().toISOString(),
      },
    ],
    observedGeneration: handled,
  });
  const refuse = async (problems: string[]) => {
    const message = problems.join('; ');
    await step('Refused', 'Nothing was run: fix the resource', ready('False', 'Refused', message));
    await event('Warning', 'Refused', message);
  };

  for (;;) {
    await condition(() => latest!.deleting || latest!.generation !== handled);
    const seen = latest!;
    if (seen.deleting) break;
    handled = seen.generation;
    if (installed) {
      // Installed once: changing the nodes of a live cluster (scale.yml, remove-node.yml) is
      // not applied yet; say so rather than reinstall over it.
      await step('Ready', 'The cluster runs as first installed', {
        ...ready(
          'True',
          'SpecChangeNotApplied',
          'changes to the nodes of an installed cluster are not applied yet',
        ),
      });
      continue;
    }
    cluster = seen.cluster ?? '';
    if (!(await kube.addProvisioningFinalizer(ref))) return; // gone before we began

    await step('Assigning', 'Assign roles from the BareMetalHosts');
    if (!cluster) {
      await refuse(['the label `cluster` is missing: it names the cluster to build']);
      continue;
    }
    const hosts = await kube.listBareMetalHosts();
    const assignment = assignRoles(seen.spec, consumer, hosts);
    if (!assignment.ok) {
      await refuse(assignment.problems);
      continue;
    }
    const found = await nodeAddresses(assignment.nodes, hosts, seen.ipSource);
    if ('problems' in found) {
      await refuse(found.problems);
      continue;
    }
    await kube.claimBareMetalHosts({
      consumer: ref,
      hosts: assignment.nodes.map((node) => node.host),
    });
    claimed = true;
    nodes = found.nodes;
    const summary = {
      masters: nodes.filter((n) => n.roles.includes('master')).length,
      workers: nodes.filter((n) => n.roles.includes('worker')).length,
      nodes: nodes.map((n) => ({
        label: n.label,
        roles: n.roles,
        host: `${n.host.namespace}/${n.host.name}`,
        ip: n.ip,
      })),
    };

    await step('Installing', 'Hand out the installer key', summary);
    const keySecret = await installerKey.ensureInstallerKey({ namespace, cluster });
    await installerKey.authorizeInstallerKey({
      namespace,
      keySecret,
      hosts: found.keyHosts,
    });

    await step('Installing', 'Run kubespray cluster.yml');
    let outcome: PlaybookOutcome;
    try {
      outcome = await kubespray.runPlaybook.executeWithOptions(
        { summary: `kubespray cluster.yml for cluster ${cluster}` },
        [
          {
            namespace,
            cluster,
            playbook: 'cluster.yml',
            inventory: renderInventory(nodes),
            groupVars: renderGroupVars({
              cluster,
              podSubnet: seen.spec.PodSubnet,
              plugins: seen.spec.KUDPlugins,
            }),
            sshUser: 'root',
            sshKeySecret: keySecret,
            controlPlaneIp: nodes.find((n) => n.roles.includes('master'))!.ip,
          },
        ],
      );
    } catch (err) {
      // Only kubespray's own failure is blamed here; the hosts stay assigned for a retry.
      const message = innermostMessage(err);
      log.warn('kubespray failed', { cluster, error: message });
      await step('Failed', 'kubespray cluster.yml failed: the hosts stay assigned', {
        ...ready('False', 'InstallFailed', message),
        install: { playbook: 'cluster.yml', ...failureDetails(err) },
      });
      await event('Warning', 'InstallFailed', message); // a changed spec tries again
      continue;
    }
    await kube.writeClusterIpMap({ namespace, cluster, data: ipMap(nodes) });
    installed = true;
    await step('Ready', 'Installed', {
      ...ready('True', 'Installed', `cluster ${cluster} is installed`),
      install: { playbook: 'cluster.yml', log: outcome.log },
      kubeconfigSecret: outcome.kubeconfigSecret,
    });
    await event(
      'Normal',
      'Provisioned',
      `cluster ${cluster} is installed; kubeconfig in Secret ${outcome.kubeconfigSecret}`,
    );
  }

  // Deleting: reset what was installed, free the hosts, remove what was created.
  await step('Deleting', 'Reset the hosts and release them');
  if (claimed && nodes.length > 0) {
    try {
      await kubespray.runPlaybook.executeWithOptions(
        { summary: `kubespray reset.yml for cluster ${cluster}` },
        [
          {
            namespace,
            cluster,
            playbook: 'reset.yml',
            inventory: renderInventory(nodes),
            groupVars: renderGroupVars({ cluster }),
            sshUser: 'root',
            sshKeySecret: `${cluster}-ssh-key`,
          },
        ],
      );
    } catch (err) {
      // A host that is gone cannot be reset; it is released all the same.
      await event('Warning', 'ResetFailed', innermostMessage(err));
    }
  }
  await kube.releaseBareMetalHosts({ consumer: ref });
  if (cluster) await kube.deleteClusterOutputs({ namespace, cluster });
  await kube.removeProvisioningFinalizer(ref);
  setCurrentDetails(`**${consumer}**: deleted; hosts released (${workflowInfo().workflowId}).`);
}

/** Each node's IP (NIC status or DHCP lease) and how the installer key reaches it. */
async function nodeAddresses(
  assigned: AssignedNode[],
  hosts: HostInventory[],
  source: 'nic' | 'dhcp',
): Promise<
  | {
      nodes: Array<AssignedNode & InventoryNode>;
      keyHosts: Array<{ label: string; address: string; user: string; sshSecret: string }>;
    }
  | { problems: string[] }
> {
  const problems: string[] = [];
  const leases =
    source === 'dhcp' ? await dhcp.leasedIps({ macs: assigned.map((n) => n.mac) }) : {};
  const nodes: Array<AssignedNode & InventoryNode> = [];
  const keyHosts: Array<{ label: string; address: string; user: string; sshSecret: string }> = [];
  for (const node of assigned) {
    const host = hosts.find(
      (h) => h.namespace === node.host.namespace && h.name === node.host.name,
    )!;
    const ip =
      source === 'dhcp' ? leases[node.mac]?.ip : host.nics.find((nic) => nic.mac === node.mac)?.ip;
    const where = `${node.roles[0]} ${node.label} (BareMetalHost ${host.namespace}/${host.name})`;
    if (!ip) {
      problems.push(
        `${where}: no IP for MAC ${node.mac}${source === 'dhcp' ? `: ${leases[node.mac]?.missing ?? 'no lease'}` : ' in its NIC status'}`,
      );
      continue;
    }
    if (!IP.test(ip)) problems.push(`${where}: ${ip} is not an IP address`);
    const user = host.sshUser ?? 'root';
    if (!USER.test(user)) problems.push(`${where}: ssh user ${user} is not a user name`);
    if (!host.sshSecret) {
      problems.push(
        `${where}: no annotation bpa.akraino.org/ssh-secret naming the Secret with its admin key`,
      );
      continue;
    }
    nodes.push({ ...node, ip, user });
    keyHosts.push({ label: node.label, address: ip, user, sshSecret: host.sshSecret });
  }
  return problems.length ? { problems } : { nodes, keyHosts };
}

/** MASTER_<label> / WORKER_<label> → IP, as the original's `<cluster>-configmap` had it. */
function ipMap(nodes: InventoryNode[]): Record<string, string> {
  const data: Record<string, string> = {};
  for (const node of nodes) {
    for (const role of node.roles) data[`${role.toUpperCase()}_${node.label}`] = node.ip;
  }
  return data;
}

function failureDetails(err: unknown): Record<string, string> {
  let cause: unknown = err;
  while (cause && typeof cause === 'object') {
    const details = (cause as { details?: unknown[] }).details?.[0];
    if (details && typeof details === 'object') {
      const {
        failedHost,
        failedTask,
        log: logFile,
      } = details as Record<string, string | undefined>;
      return Object.fromEntries(
        Object.entries({ failedHost, failedTask, log: logFile }).filter(([, v]) => v !== undefined),
      ) as Record<string, string>;
    }
    cause = (cause as { cause?: unknown }).cause;
  }
  return {};
}
