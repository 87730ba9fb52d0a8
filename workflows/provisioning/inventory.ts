// The kubespray inventory of a Provisioning, in today's layout (kubespray's
// docs/ansible/inventory.md): every node under [all] with `ansible_host` and `ip`, then the
// groups kube_control_plane, etcd (the masters), kube_node and k8s_cluster:children; and the
// cluster's group vars. Pure: labels and IPs were checked before they got here.
import type { Role } from './roles.js';

export interface InventoryNode {
  label: string;
  roles: Role[];
  ip: string;
  /** The admin user kubespray logs in as, when the host names one. */
  user?: string;
}

export function renderInventory(nodes: InventoryNode[]): string {
  const group = (name: string, members: string[]) =>
    `[${name}]\n${members.map((m) => `${m}\n`).join('')}`;
  const withRole = (role: Role) => nodes.filter((n) => n.roles.includes(role)).map((n) => n.label);
  return [
    group(
      'all',
      nodes.map(
        (n) =>
          `${n.label} ansible_host=${n.ip} ip=${n.ip}${n.user ? ` ansible_user=${n.user}` : ''}`,
      ),
    ),
    group('kube_control_plane', withRole('master')),
    group('etcd', withRole('master')),
    group('kube_node', withRole('worker')),
    group('k8s_cluster:children', ['kube_control_plane', 'kube_node']),
  ].join('\n');
}

/** Plugins kubespray itself knows, by their KUD names; the rest are listed for the playbooks. */
const KUBESPRAY_PLUGIN_VARS: Record<string, string> = {
  multus: 'kube_network_plugin_multus',
};

/** group_vars/k8s_cluster.yml: JSON values, which are YAML too. */
export function renderGroupVars(input: {
  cluster: string;
  podSubnet?: string;
  plugins?: string[];
}): string {
  const vars: Array<[string, unknown]> = [
    ['cluster_name', input.cluster],
    // The admin kubeconfig is fetched to <inventory>/artifacts/admin.conf, as KUD had it.
    ['kubeconfig_localhost', true],
  ];
  if (input.podSubnet) vars.push(['kube_pods_subnet', input.podSubnet]);
  const plugins = input.plugins ?? [];
  for (const plugin of plugins) {
    const known = KUBESPRAY_PLUGIN_VARS[plugin];
    if (known) vars.push([known, true]);
  }
  if (plugins.length) vars.push(['bpa_kud_plugins', plugins]);
  return vars.map(([key, value]) => `${key}: ${JSON.stringify(value)}\n`).join('');
}
