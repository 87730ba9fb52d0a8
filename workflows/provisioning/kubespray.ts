// How kubespray reaches a Provisioning's cluster: the inventory, group variables, installer key
// and given host keys of a playbook run (run with the spec locked, since a change mid-run could
// not be seen until it ends), and the same for a ClusterOperation's playbooks.
import type { Playbook } from '../../shared/contracts/provisioning.js';
import type { PlaybookOutcome } from '../../activities/ansible/playbook.js';
import type { OperationCluster } from '../../shared/contracts/cluster-operation.js';
import { installerKeySecretName } from '../../shared/bpa-api.js';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import { playbooks } from './activity-proxies.js';
import { lock } from './host-hold.js';
import { inventoryOf } from '../../shared/inventory.js';
import { renderGroupVars } from './inventory.js';
import type { ProvisioningNode } from './nodes.js';
import type { Provisioner } from './provisioner.js';

/** Runs a playbook with the spec locked: a change mid-run could not be seen until it ends. */
export async function runPlaybook(
  provisioner: Provisioner,
  playbook: Playbook,
  nodes: ProvisioningNode[],
  {
    podSubnet,
    plugins,
    kubesprayRelease,
  }: { podSubnet?: string | undefined; plugins: string[]; kubesprayRelease?: string | undefined },
  limit?: string[],
): Promise<PlaybookOutcome> {
  const cluster = provisioner.cluster;
  await lock(
    provisioner,
    `kubespray ${playbook} is running for cluster ${cluster}: change it when it is done`,
  );
  try {
    const outcome = await playbooks.runPlaybook.executeWithOptions(
      {
        summary: `kubespray ${playbook} for cluster ${cluster}${limit ? ` (${limit.join(', ')})` : ''}`,
      },
      [
        {
          namespace: provisioner.ref.namespace,
          cluster,
          playbook,
          inventory: inventoryOf(nodes),
          groupVars: renderGroupVars({ cluster, ...(podSubnet ? { podSubnet } : {}), plugins }),
          sshUser: 'root',
          sshKeySecret: installerKeySecretName(cluster),
          owner: provisioner.ref,
          ...(limit ? { limit } : {}),
          ...(kubesprayRelease ? { kubesprayRelease } : {}),
          ...givenHostKeys(nodes),
          ...(playbook === 'cluster.yml'
            ? { controlPlaneIp: nodes.find((n) => n.roles.includes('master'))!.ip }
            : {}),
        },
      ],
    );
    provisioner.lastRun = { playbook, log: outcome.log };
    return outcome;
  } finally {
    await lock(provisioner);
  }
}

/** Where an operation's playbooks reach the cluster as installed; none before the install. */
export function operationTarget(provisioner: Provisioner): OperationCluster | undefined {
  const installed = provisioner.installed;
  if (!installed) return undefined;
  const { cluster, nodes, podSubnet, plugins, kubesprayRelease } = installed;
  return {
    cluster,
    provisioning: provisioner.ref,
    inventory: inventoryOf(nodes),
    groupVars: renderGroupVars({ cluster, ...(podSubnet ? { podSubnet } : {}), plugins }),
    sshUser: 'root',
    sshKeySecret: installerKeySecretName(cluster),
    ...(kubesprayRelease ? { kubesprayRelease } : {}),
    ...givenHostKeys(nodes),
  };
}

/** The host keys the nodes were given, by address, for ansible's known_hosts (none: unset). */
function givenHostKeys(nodes: ProvisioningNode[]): { hostKeys?: Record<string, GivenHostKey> } {
  const given = nodes.filter((node) => node.hostKey);
  return given.length
    ? { hostKeys: Object.fromEntries(given.map((node) => [node.ip, node.hostKey!])) }
    : {};
}
