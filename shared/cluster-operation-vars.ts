// Which variables a ClusterOperation's step may pass to ansible (issue 37). A deny-list comes
// first and no allow-list overrides it: the names that would make ansible act on the worker that
// runs it, or that hostflow sets itself. Then a builtin playbook takes only the names on its
// allow-list; a custom action's variables are the tenant's own and reach only its sandboxed run.
// kubespray paths are of v2.31.0, as released.

interface Denied {
  /** The name, or a pattern of names. */
  name: string | RegExp;
  /** What it would do, as the refusal says it. */
  why: string;
}

const ON_THE_WORKER = 'it would have ansible act on the worker that runs it, not on the nodes';
const DOWNLOADS = 'it says where kubespray downloads what the nodes run';

/** Never an operation's to set, whatever its action. */
export const DENIED_VARS: readonly Denied[] = [
  // ansible's connection variables: ansible_connection=local runs every task on the worker.
  { name: /^ansible_/, why: "it is ansible's own, saying how and where a host is reached" },
  { name: /^hostflow_/, why: 'hostflow sets it' },
  // activities/ansible/playbook.ts sets them for reset.yml and remove-node.yml (from spec.nodes).
  { name: 'skip_confirmation', why: 'hostflow sets it' },
  { name: 'node', why: 'hostflow sets it from spec.nodes' },
  // Host variables, which -e outranks (magic ones such as groups and playbook_dir it does not;
  // tried with ansible-core 2.18): -e inventory_hostname=localhost has kubespray's downloads
  // delegated to the worker (roles/download/tasks/download_file.yml, download_container.yml:
  // delegate_to ... else inventory_hostname); inventory_dir moves credentials_dir and
  // artifacts_dir, which are on the worker.
  ...['inventory_hostname', 'inventory_hostname_short', 'group_names'].map((name) => ({
    name,
    why: "it is ansible's name for the host a task runs on",
  })),
  ...['inventory_dir', 'inventory_file'].map((name) => ({ name, why: ON_THE_WORKER })),
  // download_localhost (roles/kubespray_defaults/defaults/main/download.yml: download_delegate),
  // kubeconfig_localhost and kubectl_localhost (roles/kubernetes/client/tasks/main.yml:
  // delegate_to: localhost; hostflow sets kubeconfig_localhost, workflows/provisioning/
  // inventory.ts), *_on_localhost (download.yml, defaults/main/main.yml
  // container_manager_on_localhost, roles/download/tasks/prep_download.yml runs
  // image_info_command_on_localhost on localhost). loadbalancer_apiserver_localhost matches too:
  // it moves the API endpoint of the kubeconfig hostflow keeps.
  { name: /localhost/, why: ON_THE_WORKER },
  // download_run_once turns download_force_cache on: files and images are cached on localhost
  // and copied back to it (roles/download/tasks/download_file.yml, download_container.yml,
  // prep_download.yml), in download_cache_dir; download_delegate is where they are fetched.
  ...['download_run_once', 'download_force_cache', 'download_cache_dir', 'download_delegate'].map(
    (name) => ({ name, why: ON_THE_WORKER }),
  ),
  // Paths in that cache on localhost (download_file.yml, roles/download/tasks/
  // set_container_facts.yml; -e outranks their set_fact). image_path_final is written on
  // localhost by image_save_command_on_localhost with crio.
  ...['file_path_cached', 'image_path_cached', 'image_path_final'].map((name) => ({
    name,
    why: ON_THE_WORKER,
  })),
  // *_download_url, the bases they are built from, and argocd_install_url (download.yml): where
  // the binaries the nodes run as root come from, and with download_run_once what the worker
  // fetches.
  { name: /_download_url$/, why: DOWNLOADS },
  ...['github_url', 'dl_k8s_io_url', 'storage_googleapis_url', 'get_helm_url'].map((name) => ({
    name,
    why: DOWNLOADS,
  })),
  { name: 'argocd_install_url', why: DOWNLOADS },
  // kubernetes/client/defaults/main.yml: where admin.conf and kubectl are written on localhost.
  { name: 'artifacts_dir', why: ON_THE_WORKER },
  // kubespray_defaults/defaults/main/main.yml; kubernetes/control-plane/defaults/main/main.yml
  // writes kube_encrypt_token there through lookup('password'), which runs on localhost.
  { name: 'credentials_dir', why: ON_THE_WORKER },
  // The nodes' staging directory, and a path on localhost for download_localhost with crio
  // (set_container_facts.yml: image_save_command_on_localhost writes image_path_final).
  { name: 'local_release_dir', why: ON_THE_WORKER },
  // roles/bastion-ssh-config/tasks/main.yml: a template's source and destination on localhost.
  { name: 'ssh_bastion_config_name', why: ON_THE_WORKER },
];

/** Why `name` is never an operation's to set; undefined when it is not denied. */
export function deniedVar(name: string): string | undefined {
  const found = DENIED_VARS.find((d) =>
    typeof d.name === 'string' ? d.name === name : d.name.test(name),
  );
  return found?.why;
}

/** An allow-list: refuses, at load, to hold a name the deny-list refuses. */
export function allowList(names: readonly string[]): readonly string[] {
  const denied = names.filter((name) => deniedVar(name) !== undefined);
  if (denied.length) throw new Error(`denied variables in an allow-list: ${denied.join(', ')}`);
  return names;
}

/**
 * What each builtin playbook (BUILTIN_PLAYBOOKS, shared/cluster-operation-api.ts) takes from an
 * operation; one without a list here takes none. Not the confirm pauses
 * (upgrade_node_confirm, upgrade_node_post_upgrade_confirm): they wait for an answer at a terminal
 * that no one watches.
 */
export const ALLOWED_VARS: Readonly<Record<string, readonly string[]>> = {
  // kubespray's docs/operations/upgrades.md: the version, the batch size, the pauses per node;
  // roles/upgrade/pre-upgrade/defaults/main.yml: how long a node's drain may take.
  'upgrade-cluster.yml': allowList([
    'kube_version',
    'serial',
    'drain_grace_period',
    'drain_timeout',
    'upgrade_node_pause_seconds',
    'upgrade_node_post_upgrade_pause_seconds',
  ]),
  // The version the cluster runs (after an upgrade, not the release's default).
  'cluster.yml': allowList(['kube_version']),
  // The version the new nodes join at: the cluster's.
  'scale.yml': allowList(['kube_version']),
  // playbooks/remove_node.yml: reset_nodes false for a node that cannot be reached;
  // roles/remove_node/pre_remove/defaults/main.yml: the drain, and going on if it fails.
  'remove-node.yml': allowList([
    'reset_nodes',
    'allow_ungraceful_removal',
    'drain_grace_period',
    'drain_timeout',
  ]),
  // roles/reset/defaults/main.yml: whether iptables are flushed and the network restarted.
  'reset.yml': allowList(['flush_iptables', 'reset_restart_network']),
};

/**
 * Each problem with the names a step passes: `playbook` is its builtin playbook, whose allow-list
 * applies; undefined for a custom action, whose names only the deny-list limits. The names the
 * playbook takes are said once, after the step's last problem.
 */
export function varNameProblems(
  names: readonly string[],
  playbook: string | undefined,
  where: string,
): string[] {
  const denied = names.flatMap((name) => {
    const why = deniedVar(name);
    return why === undefined ? [] : [`${where}: ${name} is refused for every action: ${why}`];
  });
  if (playbook === undefined) return denied;
  const allowed = ALLOWED_VARS[playbook] ?? [];
  const takes = allowed.length ? list(allowed, 'or') : 'none';
  const unknown = names.filter((name) => deniedVar(name) === undefined && !allowed.includes(name));
  if (unknown.length) {
    const are = unknown.length > 1 ? 'are not variables' : 'is not a variable';
    const use = allowed.length ? `use ${takes}` : 'it takes none';
    return [
      ...denied,
      `${where}: ${list(unknown, 'and')} ${are} ${playbook} takes from an operation: ${use}`,
    ];
  }
  if (!denied.length) return [];
  return [...denied.slice(0, -1), `${denied.at(-1)}; ${playbook} takes ${takes}`];
}

/** `a`, `a or b`, `a, b or c` (or with `and`). */
function list(names: readonly string[], last: 'and' | 'or'): string {
  return names.length < 2
    ? names.join('')
    : `${names.slice(0, -1).join(', ')} ${last} ${names.at(-1)}`;
}
