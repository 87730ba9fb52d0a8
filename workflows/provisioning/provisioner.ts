// What one Provisioning workflow knows and does: the cluster as installed, the hosts it holds, the
// nodes kubespray touched; planning a spec into steps, carrying them out, and tearing down. Every
// step says where it is (status, details, Events), and a failing step leaves the plan resumable.
// While it holds hosts it locks them against deletion, and while kubespray runs, its own spec.
import { isCancellation, log, patched } from '@temporalio/workflow';
import type {
  Playbook,
  ProvisioningRef,
  ProvisioningObservation,
} from '../../shared/contracts/provisioning.js';
import type { PlaybookOutcome } from '../../activities/ansible/playbook.js';
import type { OperationCluster } from '../../shared/contracts/cluster-operation.js';
import {
  BAREMETALHOST_API,
  installerKeySecretName,
  PROVISIONING_API,
  RETRY_ANNOTATION,
  VIRTLET_CLUSTER_TYPE,
  type HostInventory,
  type HostNamespaces,
} from '../../shared/bpa-api.js';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import { forbiddenKindOf, innermostMessage } from '../../shared/failures.js';
import type { LockTarget } from '../../locks/api.js';
import { releaseLocks, takeLocks } from '../../locks/hold.js';
import { installerKey, kubesprayCheck, playbooks, provisioningApi } from './activities.js';
import type { ResourceStatusState } from '../kit/resource-status.js';
import { PATCH_WAIT_OUT_FAILURES } from '../kit/retry.js';
import { renderGroupVars, renderInventory } from './inventory.js';
import { ipMap, nodeAddresses, nodeSummary, type ProvisioningNode } from './nodes.js';
import {
  planInstall,
  planScale,
  unionNodes,
  withoutNodes,
  type InstalledCluster,
  type Plan,
  type PlanStep,
} from './plans.js';
import { sayHostsFreed, sayVirtletIgnored } from './notices.js';
import { failureDetails } from '../kit/playbook-failure.js';
import { ProvisioningReport } from './report.js';
import { assignRoles } from './roles.js';

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

/** What a Provisioner knows, carried into the next run when its workflow continues as new. */
export interface ProvisionerState {
  cluster: string;
  generation: number;
  tries: number;
  installed?: InstalledCluster;
  held: ProvisioningNode[];
  touched: ProvisioningNode[];
  kubeconfigSecret?: string;
  lockedIn: string[];
  lastRun?: { playbook: Playbook; log: string };
  /** Its status's phase and conditions (absent when carried from before the status kit). */
  status?: ResourceStatusState;
  /** The installer key lines it authorized on hosts (v17; absent: none recorded). */
  installerKeys?: string[];
}

const FORBIDDEN_ADVICE =
  "Free the namespace's ResourceQuota or change the admission policy that refuses it, then " +
  `set the annotation ${RETRY_ANNOTATION} to resume`;

export class Provisioner {
  cluster: string;
  generation = 0;
  /** Plans started: Events of one try are one Event each, a retry's are new ones. */
  tries = 0;
  readonly report: ProvisioningReport;
  /** The last plan was refused only for hosts that are not free now: a host freeing up may do. */
  waitsForHost = false;
  private installed: InstalledCluster | undefined;
  /** The nodes whose hosts it holds (claimed and locked). */
  private held: ProvisioningNode[] = [];
  /** Nodes kubespray ran on and no reset has undone: what a delete resets. */
  private touched: ProvisioningNode[] = [];
  private kubeconfigSecret: string | undefined;
  /** Every namespace it ever locked a host in: where its Locks may be. */
  private readonly lockedIn = new Set<string>();
  /** The last kubespray run that succeeded, and where its log is. */
  private lastRun: { playbook: Playbook; log: string } | undefined;
  private readonly consumer: string;
  /** Where the last plan looked for hosts (v14). */
  private searched: HostNamespaces | undefined;
  /** The installer key lines it authorized on hosts: what it takes back (v17). */
  private installerKeys: string[] = [];

  constructor(
    private readonly ref: ProvisioningRef,
    cluster: string,
    carried?: ProvisionerState,
  ) {
    this.cluster = cluster;
    if (carried) {
      ({ cluster: this.cluster, generation: this.generation, tries: this.tries } = carried);
      this.installed = carried.installed;
      this.held = carried.held;
      this.touched = carried.touched;
      this.kubeconfigSecret = carried.kubeconfigSecret;
      carried.lockedIn.forEach((namespace) => this.lockedIn.add(namespace));
      this.lastRun = carried.lastRun;
      this.installerKeys = carried.installerKeys ?? [];
    }
    this.consumer = `${ref.namespace}/${ref.name}`;
    this.report = new ProvisioningReport(
      ref,
      () => ({
        cluster: this.cluster,
        generation: this.generation,
        eventScope: `${this.generation}/${this.tries}`,
      }),
      true,
      carried?.status,
    );
  }

  /** Everything it knows, for the next run (see the constructor). */
  state(): ProvisionerState {
    return {
      cluster: this.cluster,
      generation: this.generation,
      tries: this.tries,
      ...(this.installed ? { installed: this.installed } : {}),
      held: this.held,
      touched: this.touched,
      ...(this.kubeconfigSecret ? { kubeconfigSecret: this.kubeconfigSecret } : {}),
      lockedIn: [...this.lockedIn].sort(),
      ...(this.lastRun ? { lastRun: this.lastRun } : {}),
      status: this.report.state,
      ...(this.installerKeys.length ? { installerKeys: this.installerKeys } : {}),
    };
  }

  /** The steps from the cluster as it is to the one `seen` asks for; or why there are none. */
  async plan(seen: ProvisioningObservation): Promise<Plan | 'refused' | 'gone'> {
    const label = seen.cluster ?? '';
    if (!this.installed) this.cluster = label;
    if (!(await provisioningApi.addProvisioningFinalizer(this.ref))) return 'gone';
    if (!this.installed)
      await this.report.step('Assigning', 'Assign roles from the BareMetalHosts');
    if (seen.clusterType === VIRTLET_CLUSTER_TYPE && patched(PATCH_VIRTLET_WARNED)) {
      await sayVirtletIgnored(this.report);
    }
    if (!label) {
      return this.refuse(['the label `cluster` is missing: it names the cluster to build']);
    }
    if (patched(PATCH_KUBESPRAY_RELEASE)) {
      const release = seen.spec.kubesprayRelease;
      const check = await kubesprayCheck.checkKubespray(release ? { release } : {});
      if (check.problem) return this.refuse([check.problem]);
    }
    const { hosts, searched } = await this.listHosts();
    const current = this.installed?.nodes ?? this.held;
    const assignment = assignRoles(seen.spec, this.consumer, hosts, current, searched);
    if (!assignment.ok) return this.refuse(assignment.problems, assignment.busy);
    const found = await nodeAddresses(
      assignment.nodes,
      hosts,
      seen.ipSource,
      patched(PATCH_GIVEN_HOST_KEYS),
    );
    if ('problems' in found) return this.refuse(found.problems);
    let plan: Plan;
    if (this.installed) {
      const scale = planScale(
        this.installed,
        { cluster: label, ...found, spec: seen.spec },
        !patched(PATCH_CLEARER_SCALE)
          ? 'as-masters'
          : patched(PATCH_SCALE_DOWN_TO_WORKING_MASTERS)
            ? 'masters-made-workers'
            : 'every-worker-goes',
      );
      if ('problems' in scale) return this.refuse(scale.problems);
      plan = scale.plan;
    } else {
      const dropped = withoutNodes(this.touched, found.nodes);
      plan = planInstall(found.nodes, found.keyHosts, seen.spec, dropped);
    }
    try {
      await provisioningApi.claimBareMetalHosts({
        consumer: this.ref,
        hosts: plan.nodes.map((n) => n.host),
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      return this.refuse([innermostMessage(err)], true); // taken by another Provisioning meanwhile
    }
    const before = this.held;
    this.held = unionNodes(this.installed?.nodes ?? this.touched, plan.nodes);
    // Hosts of an earlier try that nothing ran on (their key step may have).
    await this.revokeInstallerKey(withoutNodes(before, this.held));
    await this.release();
    return plan;
  }

  /** The hosts it may use, and (v14) where they were looked for. */
  private async listHosts(): Promise<{ hosts: HostInventory[]; searched?: HostNamespaces }> {
    const tenantsApart = patched(PATCH_TENANTS_APART);
    if (tenantsApart && patched(PATCH_SAY_WHERE_HOSTS_SEARCHED)) {
      const found = await provisioningApi.searchBareMetalHosts({ consumer: { ...this.ref } });
      this.searched = found.searched;
      return found;
    }
    const hosts = await provisioningApi.listBareMetalHosts(
      tenantsApart ? { consumer: { ...this.ref } } : undefined,
    );
    return { hosts };
  }

  /** The hosts it waited for were freed, and `plan` takes them (v15): says so. */
  sayHostsFreed(plan: Plan, looks: number): Promise<void> {
    return sayHostsFreed(this.report, {
      plan,
      cluster: this.cluster,
      installed: this.isInstalled,
      looks,
      searched: this.searched,
    });
  }

  /** Carries out `plan` from step `from`; the index of the step that failed, if one did. */
  async carryOut(plan: Plan, from: number, goOn: () => boolean): Promise<number | undefined> {
    for (let index = from; index < plan.steps.length; index++) {
      if (!goOn()) return undefined; // being deleted: what was done is undone there
      const step = plan.steps[index]!;
      await this.report.step(plan.phase, step.what, {
        ...(index === from ? nodeSummary(plan.nodes) : {}),
        failedStep: null,
      });
      try {
        await this.run(plan, step);
      } catch (err) {
        if (isCancellation(err)) throw err;
        await this.failed(step, err);
        return index;
      }
    }
    return undefined;
  }

  /** Resets what kubespray touched, frees the hosts and removes what it made. */
  async tearDown(): Promise<void> {
    await this.report.step('Deleting', 'Reset the hosts and release them');
    if (this.touched.length) {
      try {
        const nodes = this.touched;
        await this.playbook('reset.yml', nodes, {
          podSubnet: this.installed?.podSubnet,
          plugins: [],
          kubesprayRelease: this.installed?.kubesprayRelease,
        });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // A host that is gone cannot be reset; it is released all the same.
        await this.report.event('Warning', 'ResetFailed', innermostMessage(err));
      }
    }
    await this.revokeInstallerKey(unionNodes(this.touched, this.held));
    this.held = [];
    this.touched = [];
    await provisioningApi.releaseBareMetalHosts({ consumer: this.ref });
    if (patched(PATCH_UNLOCK_UNTIL_DONE)) {
      // A Lock left behind would refuse the host's deletion long after the cluster is gone.
      await releaseLocks({
        alsoIn: this.lockedInSorted(),
        // As untilDone waited it out, with its patch (kit/retry.ts), so recorded runs replay.
        waitsOut: (err) => !isCancellation(err) && patched(PATCH_WAIT_OUT_FAILURES),
        onPending: (cause, attempt) =>
          log.warn(`${this.consumer}: cannot release its Locks, try ${attempt}`, { cause }),
      });
    } else {
      await this.lock();
    }
    if (this.cluster)
      await provisioningApi.deleteClusterOutputs({
        namespace: this.ref.namespace,
        cluster: this.cluster,
        owner: this.ref,
      });
  }

  /** Installed: its cluster takes operations. */
  get isInstalled(): boolean {
    return this.installed !== undefined;
  }

  /** Where an operation's playbooks reach the cluster as installed; none before the install. */
  operationTarget(): OperationCluster | undefined {
    const installed = this.installed;
    if (!installed) return undefined;
    const { cluster, nodes, podSubnet, plugins, kubesprayRelease } = installed;
    return {
      cluster,
      provisioning: this.ref,
      inventory: renderInventory(nodes),
      groupVars: renderGroupVars({ cluster, ...(podSubnet ? { podSubnet } : {}), plugins }),
      sshUser: 'root',
      sshKeySecret: installerKeySecretName(cluster),
      ...(kubesprayRelease ? { kubesprayRelease } : {}),
      ...givenHostKeys(nodes),
    };
  }

  /** Locks its spec and itself against deletion while an operation runs (`why`); or lets go. */
  holdForOperation(why?: string): Promise<void> {
    return this.lock(why, ['UPDATE', 'DELETE']);
  }

  /** Lets go of every Lock, one try (a cancelled run's non-cancellable clean-up). */
  async unlockAll(): Promise<void> {
    await releaseLocks({ alsoIn: this.lockedInSorted(), waitsOut: () => false });
  }

  private lockedInSorted(): string[] {
    return [...this.lockedIn].sort();
  }

  private async run(plan: Plan, step: PlanStep): Promise<void> {
    const { namespace } = this.ref;
    const cluster = this.cluster;
    const labels = step.nodes.map((node) => node.label);
    switch (step.kind) {
      case 'reset.yml':
        await this.playbook('reset.yml', step.nodes, plan);
        return this.letGo(step.nodes);
      case 'key': {
        const keySecret = await installerKey.ensureInstallerKey({
          namespace,
          cluster,
          owner: this.ref,
        });
        const hosts = plan.keyHosts.filter((host) => labels.includes(host.label));
        if (!patched(PATCH_INSTALLER_KEY_RECORDED)) {
          await installerKey.authorizeInstallerKey({ namespace, keySecret, hosts });
          return;
        }
        // Recorded before any host is given it, so a step that fails half-way is taken back too.
        const publicKey = await installerKey.installerPublicKey({ namespace, keySecret });
        if (!this.installerKeys.includes(publicKey)) this.installerKeys.push(publicKey);
        await installerKey.authorizeInstallerKey({ namespace, keySecret, hosts, publicKey });
        return;
      }
      case 'cluster.yml': {
        this.touched = unionNodes(this.touched, step.nodes);
        const outcome = await this.playbook('cluster.yml', step.nodes, plan);
        this.kubeconfigSecret = outcome.kubeconfigSecret;
        return;
      }
      case 'remove-node.yml': {
        const before = this.installed!.nodes;
        await this.playbook('remove-node.yml', before, plan, labels);
        this.installed!.nodes = withoutNodes(before, step.nodes);
        return this.letGo(step.nodes);
      }
      case 'scale.yml':
        this.touched = unionNodes(this.touched, step.nodes);
        await this.playbook('scale.yml', plan.nodes, plan, labels);
        return;
      case 'outputs':
        await provisioningApi.writeClusterIpMap({
          namespace,
          cluster,
          data: ipMap(plan.nodes),
          owner: this.ref,
        });
        return this.done(plan);
    }
  }

  private async done(plan: Plan): Promise<void> {
    const first = !this.installed;
    const { podSubnet, plugins } = plan;
    this.installed = {
      cluster: this.cluster,
      nodes: plan.nodes,
      plugins,
      ...(podSubnet ? { podSubnet } : {}),
      ...(plan.kubesprayRelease ? { kubesprayRelease: plan.kubesprayRelease } : {}),
    };
    const unchanged =
      !first && !plan.added.length && !plan.removed.length && patched(PATCH_CLEARER_SCALE);
    const reason = first ? 'Installed' : unchanged ? 'Unchanged' : 'Scaled';
    const what = first
      ? `cluster ${this.cluster} is installed; kubeconfig in Secret ${this.kubeconfigSecret}`
      : `cluster ${this.cluster} has ${nodeCount(plan.nodes.length)}` +
        (unchanged ? ': the spec asks for the nodes it has; no playbook ran' : '') +
        (plan.added.length ? `; added ${plan.added.join(', ')}` : '') +
        (plan.removed.length ? `; removed ${plan.removed.join(', ')}` : '');
    await this.report.step('Ready', reason, {
      ...this.report.ready('True', reason, what),
      install: { ...this.lastRun, failedHost: null, failedTask: null },
      ...nodeSummary(plan.nodes),
      ...(this.kubeconfigSecret ? { kubeconfigSecret: this.kubeconfigSecret } : {}),
    });
    await this.report.event('Normal', first ? 'Provisioned' : reason, what);
  }

  private async failed(step: PlanStep, err: unknown): Promise<void> {
    const cause = innermostMessage(err);
    // A kubespray failure names its playbook, host and task; any other says which step it was.
    let message = step.kind.endsWith('.yml') ? cause : `${step.what}: ${cause}`;
    let reason = this.installed ? 'ScaleFailed' : 'InstallFailed';
    if (forbiddenKindOf(err) && patched(PATCH_FORBIDDEN_ANSWERED)) {
      // The API server refused what it writes next to the cluster: the tenant's to fix.
      reason = 'Forbidden';
      message = `${step.what}: ${cause}. ${FORBIDDEN_ADVICE}`;
    }
    log.warn('provisioning step failed', { cluster: this.cluster, step: step.what, error: cause });
    await this.report.step(
      'Failed',
      `${step.what} failed: fix the cause, then set the annotation ${RETRY_ANNOTATION} to resume here`,
      {
        ...this.report.ready('False', reason, message),
        failedStep: step.what,
        ...(step.kind.endsWith('.yml')
          ? {
              install: {
                playbook: step.kind,
                failedHost: null,
                failedTask: null,
                ...failureDetails(err),
              },
            }
          : {}),
      },
    );
    await this.report.event('Warning', reason, message);
  }

  /** `busy`: only hosts that are not free now stand in the way (see `waitsForHost`). */
  private async refuse(problems: string[], busy = false): Promise<'refused'> {
    this.waitsForHost = busy;
    if (!this.installed) {
      await this.report.refuse(problems);
      return 'refused';
    }
    const message = `${problems.join('; ')}; the cluster runs as last installed`;
    await this.report.step('Ready', 'The change was refused: fix the resource', {
      ...this.report.ready('True', 'ChangeRefused', message),
    });
    await this.report.event('Warning', 'Refused', message);
    return 'refused';
  }

  /** Runs a playbook with the spec locked: a change mid-run could not be seen until it ends. */
  private async playbook(
    playbook: Playbook,
    nodes: ProvisioningNode[],
    {
      podSubnet,
      plugins,
      kubesprayRelease,
    }: { podSubnet?: string | undefined; plugins: string[]; kubesprayRelease?: string | undefined },
    limit?: string[],
  ): Promise<PlaybookOutcome> {
    const cluster = this.cluster;
    await this.lock(
      `kubespray ${playbook} is running for cluster ${cluster}: change it when it is done`,
    );
    try {
      const outcome = await playbooks.runPlaybook.executeWithOptions(
        {
          summary: `kubespray ${playbook} for cluster ${cluster}${limit ? ` (${limit.join(', ')})` : ''}`,
        },
        [
          {
            namespace: this.ref.namespace,
            cluster,
            playbook,
            inventory: renderInventory(nodes),
            groupVars: renderGroupVars({ cluster, ...(podSubnet ? { podSubnet } : {}), plugins }),
            sshUser: 'root',
            sshKeySecret: installerKeySecretName(cluster),
            owner: this.ref,
            ...(limit ? { limit } : {}),
            ...(kubesprayRelease ? { kubesprayRelease } : {}),
            ...givenHostKeys(nodes),
            ...(playbook === 'cluster.yml'
              ? { controlPlaneIp: nodes.find((n) => n.roles.includes('master'))!.ip }
              : {}),
          },
        ],
      );
      this.lastRun = { playbook, log: outcome.log };
      return outcome;
    } finally {
      await this.lock();
    }
  }

  /** Nodes kubespray has reset or removed: their hosts go back to the free ones. */
  private async letGo(nodes: ProvisioningNode[]): Promise<void> {
    await this.revokeInstallerKey(nodes);
    this.touched = withoutNodes(this.touched, nodes);
    this.held = withoutNodes(this.held, nodes);
    await this.release();
  }

  /**
   * Takes the cluster's installer key back from hosts leaving it. A host that cannot be reached
   * is released all the same (it may be gone for good), with a Warning saying so.
   */
  private async revokeInstallerKey(nodes: ProvisioningNode[]): Promise<void> {
    if (nodes.length === 0 || !this.cluster || !patched(PATCH_TENANTS_APART)) return;
    try {
      const inventory = await provisioningApi.listBareMetalHosts({ consumer: { ...this.ref } });
      const hosts = nodes.flatMap(({ label, ip, user, host, hostKey }) => {
        const found = inventory.find((h) => h.namespace === host.namespace && h.name === host.name);
        const login = user ?? found?.sshUser ?? 'root';
        const given = hostKey ? { hostKey } : {};
        return found?.sshSecret
          ? [{ label, address: ip, user: login, sshSecret: found.sshSecret, ...given }]
          : [];
      });
      // A run that authorized before v17 has no record: the Secret's key is all there is.
      const recorded = patched(PATCH_INSTALLER_KEY_RECORDED) && this.installerKeys.length > 0;
      await installerKey.revokeInstallerKey({
        namespace: this.ref.namespace,
        keySecret: installerKeySecretName(this.cluster),
        hosts,
        ...(recorded ? { publicKeys: this.installerKeys } : {}),
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      await this.report.event('Warning', 'InstallerKeyNotRemoved', innermostMessage(err));
    }
  }

  /** Frees the hosts of this Provisioning that it no longer holds. */
  private async release(): Promise<void> {
    await provisioningApi.releaseBareMetalHosts({
      consumer: this.ref,
      keep: this.held.map((n) => n.host),
    });
    await this.lock();
  }

  /**
   * Locks the hosts it holds against deletion, and its spec (`operations`) while `running` says
   * why. A Lock that cannot be written never stops the work: it protects, it does not gate.
   */
  private async lock(
    running?: string,
    operations: LockTarget['operations'] = ['UPDATE'],
  ): Promise<void> {
    const wanted: LockTarget[] = this.held.map(({ host, label }) => ({
      ...host,
      resource: BAREMETALHOST_API.plural,
      apiGroup: BAREMETALHOST_API.group,
      operations: ['DELETE'],
      reason: `node ${label} of cluster ${this.cluster} (Provisioning ${this.consumer}): remove it from the Provisioning first`,
    }));
    if (running) {
      wanted.push({
        namespace: this.ref.namespace,
        name: this.ref.name,
        resource: PROVISIONING_API.plural,
        apiGroup: PROVISIONING_API.group,
        operations,
        reason: running,
      });
    }
    for (const target of wanted) this.lockedIn.add(target.namespace);
    await takeLocks(wanted, {
      alsoIn: this.lockedInSorted(),
      onNotLocked: (err) => {
        if (isCancellation(err)) throw err;
        log.warn('cannot write Locks; going on without them', { error: innermostMessage(err) });
      },
    });
  }
}

/** `n nodes`; `1 node` since a cluster can be scaled down to its one master again (v13). */
const nodeCount = (n: number) =>
  n === 1 && patched(PATCH_SCALE_DOWN_TO_WORKING_MASTERS) ? '1 node' : `${n} nodes`;

/** The host keys the nodes were given, by address, for ansible's known_hosts (none: unset). */
function givenHostKeys(nodes: ProvisioningNode[]): { hostKeys?: Record<string, GivenHostKey> } {
  const given = nodes.filter((node) => node.hostKey);
  return given.length
    ? { hostKeys: Object.fromEntries(given.map((node) => [node.ip, node.hostKey!])) }
    : {};
}
