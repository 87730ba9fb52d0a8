// A Provisioning's nodes as the installer reaches them: each assigned host's IP (from its NIC
// status or the DHCP server's leases) and admin login, checked before anything runs; and the
// role → IP map the original kept in `<cluster>-configmap`.
import type { GivenHostKey } from '../../platform-config/host-key.js';
import { HOST_SSH_ANNOTATIONS, type HostInventory } from '../../shared/bpa-api.js';
import { dhcpApi } from './activity-proxies.js';
import type { InventoryNode } from '../../shared/inventory.js';
import type { KeyHost } from '../../shared/contracts/provisioning.js';
import type { AssignedNode } from './roles.js';

const USER = /^[a-z_][a-z0-9_-]{0,31}$/;
const IP = /^(\d{1,3}\.){3}\d{1,3}$|^[0-9a-fA-F:]+$/;

/** An assigned node with its IP: what the inventory lists; the host key its host was given. */
export type ProvisioningNode = AssignedNode & InventoryNode & { hostKey?: GivenHostKey };

/** The host key the BareMetalHost's annotation gives (checked by the activity that read it). */
function givenHostKey(host: HostInventory): GivenHostKey | { problem: string } | undefined {
  if (host.hostKeyProblem) return { problem: host.hostKeyProblem };
  if (!host.hostKey) return undefined;
  return {
    key: host.hostKey,
    from: `annotation ${HOST_SSH_ANNOTATIONS.hostKey} on BareMetalHost ${host.namespace}/${host.name}`,
  };
}

/**
 * Each node's IP (NIC status or DHCP lease), how the installer key reaches it, and the host key
 * its BareMetalHost gives (a malformed one is a problem of that node).
 */
export async function nodeAddresses(
  assigned: AssignedNode[],
  hosts: HostInventory[],
  source: 'nic' | 'dhcp',
): Promise<{ nodes: ProvisioningNode[]; keyHosts: KeyHost[] } | { problems: string[] }> {
  const problems: string[] = [];
  const leases =
    source === 'dhcp' ? await dhcpApi.leasedIps({ macs: assigned.map((n) => n.mac) }) : {};
  const nodes: ProvisioningNode[] = [];
  const keyHosts: KeyHost[] = [];
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
    const given = givenHostKey(host);
    if (given && 'problem' in given) {
      problems.push(`${where}: ${given.problem}`);
      continue;
    }
    const hostKey = given ? { hostKey: given } : {};
    nodes.push({ ...node, ip, user, ...hostKey });
    keyHosts.push({ label: node.label, address: ip, user, sshSecret: host.sshSecret, ...hostKey });
  }
  return problems.length ? { problems } : { nodes, keyHosts };
}

/** MASTER_<label> / WORKER_<label> → IP, as the original's `<cluster>-configmap` had it. */
export function ipMap(nodes: InventoryNode[]): Record<string, string> {
  const data: Record<string, string> = {};
  for (const node of nodes) {
    for (const role of node.roles) data[`${role.toUpperCase()}_${node.label}`] = node.ip;
  }
  return data;
}

/** The status's node list and counts. */
export function nodeSummary(nodes: ProvisioningNode[]) {
  return {
    masters: nodes.filter((n) => n.roles.includes('master')).length,
    workers: nodes.filter((n) => n.roles.includes('worker')).length,
    nodes: nodes.map((n) => ({
      label: n.label,
      roles: n.roles,
      host: `${n.host.namespace}/${n.host.name}`,
      ip: n.ip,
      user: n.user,
    })),
  };
}
