// A cluster's kubespray inventory as data: its nodes with their roles, addresses and logins, from
// the planner (workflows/provisioning/) to the run's bundle, where it is rendered once
// (activities/ansible/inventory-file.ts). Runs started before the inventory was data carry the INI
// text that was rendered from it; `inventoryNodes` reads that back. Pure.

export type Role = 'master' | 'worker';

export interface InventoryNode {
  label: string;
  roles: Role[];
  ip: string;
  /** The admin user kubespray logs in as, when the host names one. */
  user?: string;
}

/** What a run carries: the nodes, or (a run started before) the INI text rendered from them. */
export type Inventory = InventoryNode[] | string;

/** The inventory's part of each node, in order: what a run carries of them. */
export function inventoryOf(nodes: InventoryNode[]): InventoryNode[] {
  return nodes.map(({ label, roles, ip, user }) => ({
    label,
    roles,
    ip,
    ...(user ? { user } : {}),
  }));
}

/** The labels of the nodes that play `role`, in the inventory's order. */
export function labelsWithRole(nodes: InventoryNode[], role: Role): string[] {
  return nodes.filter((n) => n.roles.includes(role)).map((n) => n.label);
}

/** The groups a role puts a node in, as kubespray names them. */
const ROLE_GROUPS: Record<string, Role> = { kube_control_plane: 'master', kube_node: 'worker' };

/**
 * The nodes of `inventory`. INI text is read back as the renderer wrote it: each node under
 * `[all]` with `ansible_host` (and `ansible_user`), its roles from the groups that list it.
 */
export function inventoryNodes(inventory: Inventory): InventoryNode[] {
  if (typeof inventory !== 'string') return inventory;
  const nodes = new Map<string, InventoryNode>();
  let group = '';
  for (const line of inventory.split('\n').map((l) => l.trim())) {
    if (line.startsWith('[')) {
      group = line.slice(1, -1);
      continue;
    }
    const [label, ...vars] = line.split(/\s+/);
    if (!label) continue;
    if (group === 'all') {
      const value = (name: string) =>
        vars.find((v) => v.startsWith(`${name}=`))?.slice(name.length + 1);
      const ip = value('ansible_host');
      const user = value('ansible_user');
      if (ip) nodes.set(label, { label, roles: [], ip, ...(user ? { user } : {}) });
    } else if (ROLE_GROUPS[group]) {
      nodes.get(label)?.roles.push(ROLE_GROUPS[group]);
    }
  }
  return [...nodes.values()];
}
