// The cluster's group vars for kubespray (group_vars/k8s_cluster.yml). The inventory itself is
// data (shared/inventory.ts), rendered where the run's bundle is written. Pure.
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
