// The kubespray inventory file of a run's bundle, in today's layout (kubespray's
// docs/ansible/inventory.md): every node under [all] with `ansible_host` and `ip`, then the groups
// kube_control_plane, etcd (the masters), kube_node and k8s_cluster:children. The one place the
// inventory becomes text; labels and IPs were checked before they got here.
import { labelsWithRole, type Inventory, type InventoryNode } from '../../shared/inventory.js';

export function renderInventory(nodes: InventoryNode[]): string {
  const group = (name: string, members: string[]) =>
    `[${name}]\n${members.map((m) => `${m}\n`).join('')}`;
  return [
    group(
      'all',
      nodes.map(
        (n) =>
          `${n.label} ansible_host=${n.ip} ip=${n.ip}${n.user ? ` ansible_user=${n.user}` : ''}`,
      ),
    ),
    group('kube_control_plane', labelsWithRole(nodes, 'master')),
    group('etcd', labelsWithRole(nodes, 'master')),
    group('kube_node', labelsWithRole(nodes, 'worker')),
    group('k8s_cluster:children', ['kube_control_plane', 'kube_node']),
  ].join('\n');
}

/** The file's text: rendered from the nodes, or as a run started before rendered it. */
export const inventoryText = (inventory: Inventory): string =>
  typeof inventory === 'string' ? inventory : renderInventory(inventory);
