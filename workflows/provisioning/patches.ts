// The patches of what a Provisioning does to its cluster and says of it (planning, carrying out,
// holding and releasing hosts), each a marker in its runs' histories (docs/workflow-versioning.md):
// an id never changes and is never reused. The loop's own (provisioning.ts) and the operations'
// patches sit beside the code that asks them.
/** v3: a torn-down Provisioning releases its Locks until that succeeds, never going on without. */
export const PATCH_UNLOCK_UNTIL_DONE = 'provisioning-unlock-until-done';
/**
 * v4: the kubespray release (pinned or the worker's) is checked against the worker's ansible-core
 * before any host is claimed, and a pinned release is the one every playbook runs.
 */
export const PATCH_KUBESPRAY_RELEASE = 'provisioning-kubespray-release';
/**
 * v5: hosts come from the Provisioning's own namespace and the allowed ones only, and a host
 * leaving the cluster has the installer key taken back before it is released.
 */
export const PATCH_TENANTS_APART = 'provisioning-tenants-apart';
/**
 * v6: a BareMetalHost's given host key (annotation hostflow.dev/ssh-host-key) is the only key
 * its node is accepted with, by the installer key's steps and by ansible; never first use.
 */
export const PATCH_GIVEN_HOST_KEYS = 'provisioning-given-host-keys';
/**
 * v7: a write into its namespace refused with 403 (a full ResourceQuota, an admission policy)
 * fails the step at once with the reason `Forbidden` and the API server's message, instead of
 * being retried (a kubeconfig refused after cluster.yml re-ran the playbook on every retry).
 */
export const PATCH_FORBIDDEN_ANSWERED = 'provisioning-forbidden-answered';

/**
 * v8: a spec change that leaves the nodes as they are (the same hosts, written differently) is
 * reported as such (reason Unchanged, no Scaled Event), not as a scale; a spec that removes every
 * worker is refused as what it means (the masters would become schedulable).
 */
export const PATCH_CLEARER_SCALE = 'provisioning-clearer-scale';

/**
 * v13: a spec that removes every worker is refused only when masters that do not work now would
 * (naming them); masters listed as workers too are scaled down to, as before v8 (issue 41). A
 * scale to one node says `1 node`.
 */
export const PATCH_SCALE_DOWN_TO_WORKING_MASTERS = 'provisioning-scale-down-to-working-masters';

/**
 * v14: a MAC no BareMetalHost has is refused saying which namespaces were searched and how to
 * have another searched (the hosts are listed with searchBareMetalHosts, which says where).
 */
export const PATCH_SAY_WHERE_HOSTS_SEARCHED = 'provisioning-say-where-hosts-searched';

/**
 * v15: a Provisioning that waited for hosts and takes them once freed says so (Event
 * HostsFreed) and no longer shows the refusal in its Ready condition while it goes on.
 */
export const PATCH_SAY_HOSTS_FREED = 'provisioning-say-hosts-freed';

/**
 * v16: a Provisioning labelled cluster-type: virtlet-vm is warned that hostflow does not take
 * virtlet VM pods as hosts, and installs on BareMetalHosts.
 */
export const PATCH_VIRTLET_WARNED = 'provisioning-virtlet-vm-warned';

/**
 * v17: the installer key is taken back from hosts as the engine recorded it when it handed it out
 * (`installerKeys`), never as the tenant's `<cluster>-ssh-key` Secret says at release: a tenant
 * who rewrote its id_rsa.pub could keep the key on the hosts, or have another line taken off.
 */
export const PATCH_INSTALLER_KEY_RECORDED = 'provisioning-installer-key-recorded';
