// Role assignment (the BPA operator spec's "assign roles to compute hosts"): which
// BareMetalHost becomes each master and worker of a Provisioning. Pure and deterministic, so the
// workflow replays it.
//
// - A node with a MAC gets the host with a NIC of that MAC (compared case-insensitively; the
//   original searched the serialized object for a substring), which must meet any resources it
//   also names.
// - A node without one gets the free host that meets its cpu, memory, sriov and qat with the
//   least to spare (then by name), so large hosts stay for nodes that need them.
// - A node already installed on a host keeps it while the host still meets its requirements.
// - A host serves one cluster at a time. A label in both lists is one dual-role node; with no
//   workers, the masters also work (as in the BPA operator).
// - What can never work is refused with a precise message, before anything runs.
import type {
  HostInventory,
  HostNamespaces,
  NodeRequirements,
  ProvisioningSpec,
} from '../../shared/bpa-api.js';
import type { Role } from '../../shared/inventory.js';
import { mebibytes } from './quantity.js';

export interface AssignedNode {
  label: string;
  roles: Role[];
  host: { namespace: string; name: string };
  /** The NIC the node is known by: the requested MAC, or the host's first NIC. */
  mac: string;
}

export type Assignment =
  | { ok: true; nodes: AssignedNode[] }
  /** `busy`: every problem is a host that is not free now, which a host freeing up may solve. */
  | { ok: false; problems: string[]; busy?: boolean };

interface NodeRequest extends NodeRequirements {
  label: string;
  roles: Role[];
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;
/** Labels become inventory host names: nothing an INI or YAML line could be bent with. */
const LABEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const CIDR = /^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$|^[0-9a-fA-F:]+\/\d{1,3}$/;
const PLUGIN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const normalMac = (mac: string): string => mac.trim().toLowerCase().replace(/-/g, ':');

/** The spec's nodes, merged by label, and what makes the spec impossible whatever the hosts. */
export function checkSpec(spec: ProvisioningSpec): { nodes: NodeRequest[]; problems: string[] } {
  const problems: string[] = [];
  const nodes: NodeRequest[] = [];
  const read = (role: Role, entries: Array<Record<string, NodeRequirements>> | undefined) => {
    const seen = new Set<string>();
    for (const entry of entries ?? []) {
      for (const [label, wants] of Object.entries(entry ?? {})) {
        if (!LABEL.test(label)) {
          problems.push(
            `${role} label ${JSON.stringify(label)} is not a host name: use letters, digits, ".", "_" and "-"`,
          );
          continue;
        }
        if (seen.has(label)) {
          problems.push(
            `${role} label ${label} appears twice in spec.${role}s: give each node its own label`,
          );
          continue;
        }
        seen.add(label);
        const mac = wants?.['mac-address'] ? normalMac(wants['mac-address']) : undefined;
        if (mac !== undefined && !MAC.test(mac)) {
          problems.push(
            `${role} ${label}: mac-address ${wants['mac-address']} is not a MAC address (like 00:c6:14:04:61:b2)`,
          );
        }
        if (wants?.memory !== undefined && mebibytes(String(wants.memory)) === undefined) {
          problems.push(`${role} ${label}: memory ${wants.memory} is not a quantity (like 4Gi)`);
        }
        const same = nodes.find((node) => node.label === label);
        if (!same) {
          nodes.push({ ...wants, label, roles: [role], ...(mac ? { 'mac-address': mac } : {}) });
          continue;
        }
        // The same label as a master and a worker: one node with both roles, if it is one host.
        if (mac && same['mac-address'] && mac !== same['mac-address']) {
          problems.push(
            `label ${label} is a master with MAC ${same['mac-address']} and a worker with MAC ${mac}: ` +
              'one label is one node; give the worker another label',
          );
          continue;
        }
        same.roles.push(role);
        if (mac) same['mac-address'] = mac;
      }
    }
  };
  read('master', spec.masters);
  read('worker', spec.workers);
  const byMac = new Map<string, string>();
  for (const node of nodes) {
    const mac = node['mac-address'];
    if (!mac) continue;
    const other = byMac.get(mac);
    if (other)
      problems.push(
        `${other} and ${node.label} both name MAC ${mac}: one host cannot be two nodes`,
      );
    else byMac.set(mac, node.label);
  }
  if (spec.PodSubnet !== undefined && !CIDR.test(spec.PodSubnet)) {
    problems.push(`PodSubnet ${spec.PodSubnet} is not a CIDR (like 10.244.64.0/18)`);
  }
  for (const plugin of spec.KUDPlugins ?? []) {
    if (!PLUGIN.test(plugin))
      problems.push(`KUDPlugins entry ${JSON.stringify(plugin)} is not a plugin name`);
  }
  const masters = nodes.filter((node) => node.roles.includes('master')).length;
  if (masters === 0) problems.push('spec.masters is empty: a cluster needs at least one master');
  else if (masters % 2 === 0) {
    problems.push(
      `${masters} masters make an even etcd member count, which etcd cannot use for quorum and ` +
        'kubespray refuses: use an odd number of masters (1, 3, 5)',
    );
  }
  // No workers: the masters also run workloads.
  if (!nodes.some((node) => node.roles.includes('worker'))) {
    for (const node of nodes) node.roles.push('worker');
  }
  return { nodes, problems };
}

/** What `host` lacks for `node`, in words; undefined when it meets every requirement. */
function shortfall(node: NodeRequest, host: HostInventory): string | undefined {
  const lacks: string[] = [];
  if (node.cpu !== undefined && (host.cpus ?? 0) < node.cpu) {
    lacks.push(`${host.cpus ?? 'unknown'} CPUs, needs ${node.cpu}`);
  }
  const memory = node.memory !== undefined ? mebibytes(String(node.memory)) : undefined;
  if (memory !== undefined && (host.ramMebibytes ?? 0) < memory) {
    lacks.push(`${host.ramMebibytes ?? 'unknown'} MiB of memory, needs ${node.memory}`);
  }
  if (node.sriov && !host.sriov) lacks.push('no SR-IOV');
  if (node.qat && !host.qat) lacks.push('no QAT');
  return lacks.length ? lacks.join(', ') : undefined;
}

const hostRef = (host: HostInventory) => `BareMetalHost ${host.namespace}/${host.name}`;

/** Assigns a host to every node of `spec` for `cluster`, or says why it cannot be done. */
export function assignRoles(
  spec: ProvisioningSpec,
  /** `<namespace>/<name>` of the Provisioning: hosts it already consumes stay its own. */
  consumer: string,
  hosts: HostInventory[],
  /** The nodes as last installed: a node matched by resources keeps its host while it fits. */
  current: AssignedNode[] = [],
  /** Where `hosts` were looked for: a MAC no host has is then told where it was not found. */
  searched?: HostNamespaces,
): Assignment {
  const { nodes, problems } = checkSpec(spec);
  if (problems.length) return { ok: false, problems };
  /** How many problems are hosts not free now: another Provisioning or metal3 has them. */
  let busy = 0;
  const busyNow = (problem: string) => {
    busy++;
    problems.push(problem);
  };
  let unknownMacs = false;
  const taken = new Set<HostInventory>();
  const assigned: AssignedNode[] = [];
  const free = (host: HostInventory) =>
    !taken.has(host) && !host.unavailable && (!host.consumer || host.consumer === consumer);
  const place = (node: NodeRequest, host: HostInventory, mac: string) => {
    taken.add(host);
    assigned.push({
      label: node.label,
      roles: node.roles,
      host: { namespace: host.namespace, name: host.name },
      mac,
    });
  };
  // MACs first: they name their host, so resource matching must not take it.
  for (const node of nodes.filter((n) => n['mac-address'])) {
    const mac = node['mac-address']!;
    const host = hosts.find((h) => h.nics.some((nic) => normalMac(nic.mac) === mac));
    const what = `${node.roles[0]} ${node.label}`;
    if (!host) {
      const where = searched ? ' in the namespaces searched' : '';
      problems.push(`${what}: no BareMetalHost${where} has a NIC with MAC ${mac}`);
      unknownMacs = true;
    } else if (host.unavailable && host.consumer !== consumer) {
      busyNow(`${what}: MAC ${mac} is ${hostRef(host)}, which ${host.unavailable}`);
    } else if (!free(host)) {
      busyNow(
        `${what}: MAC ${mac} is ${hostRef(host)}, which serves Provisioning ${host.consumer}`,
      );
    } else {
      const lacks = shortfall(node, host);
      if (lacks) problems.push(`${what}: MAC ${mac} is ${hostRef(host)}, which has ${lacks}`);
      else place(node, host, mac);
    }
  }
  const spare = (node: NodeRequest, host: HostInventory) => [
    (host.cpus ?? 0) - (node.cpu ?? 0),
    (host.ramMebibytes ?? 0) - (mebibytes(String(node.memory ?? '0')) ?? 0),
  ];
  const byResources = nodes.filter((n) => !n['mac-address']);
  // Then nodes already on a host that still fits: a changed spec never moves a running node.
  for (const node of byResources) {
    const was = current.find((n) => n.label === node.label)?.host;
    const host = was && hosts.find((h) => h.namespace === was.namespace && h.name === was.name);
    if (host && free(host) && !shortfall(node, host) && host.nics.length > 0) {
      place(node, host, normalMac(host.nics[0]!.mac));
    }
  }
  for (const node of byResources.filter((n) => !assigned.some((a) => a.label === n.label))) {
    const candidates = hosts
      .filter((host) => free(host) && !shortfall(node, host) && host.nics.length > 0)
      .sort((a, b) => {
        const [ca, ma] = spare(node, a);
        const [cb, mb] = spare(node, b);
        return (
          ca! - cb! ||
          ma! - mb! ||
          `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)
        );
      });
    const host = candidates[0];
    if (host) place(node, host, normalMac(host.nics[0]!.mac));
    else {
      const wants = describeWants(node);
      busyNow(`${node.roles[0]} ${node.label}: no free BareMetalHost has ${wants}`);
    }
  }
  if (unknownMacs && searched) problems.push(searchedOnly(searched));
  if (problems.length) return { ok: false, problems, busy: busy === problems.length };
  // In the spec's order, masters first, so the inventory reads like the resource.
  const order = nodes.map((node) => node.label);
  assigned.sort((a, b) => order.indexOf(a.label) - order.indexOf(b.label));
  return { ok: true, nodes: assigned };
}

/** The namespaces a Provisioning's hosts were looked for in, in words. */
export function searchedWhere({ own, allowed }: HostNamespaces): string {
  return allowed.length
    ? `namespace ${own} (the Provisioning's own) and those matching HOSTFLOW_BAREMETAL_NAMESPACES on the worker (${allowed.join(', ')})`
    : `namespace ${own} only, the Provisioning's own (HOSTFLOW_BAREMETAL_NAMESPACES on the worker allows no other)`;
}

/** Which namespaces were searched for hosts, and how to have another searched. */
function searchedOnly(searched: HostNamespaces): string {
  return (
    `BareMetalHosts were looked for in ${searchedWhere(searched)}: to use a host in another ` +
    'namespace, add that namespace to HOSTFLOW_BAREMETAL_NAMESPACES on the worker'
  );
}

function describeWants(node: NodeRequest): string {
  const wants = [
    node.cpu !== undefined ? `${node.cpu} CPUs` : '',
    node.memory !== undefined ? `${node.memory} of memory` : '',
    node.sriov ? 'SR-IOV' : '',
    node.qat ? 'QAT' : '',
  ].filter(Boolean);
  return wants.length ? wants.join(', ') : 'a NIC (every host is taken)';
}
