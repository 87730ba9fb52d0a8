// What one Provisioning workflow knows of its cluster, shared by the parts of its story: the
// cluster as installed, the hosts it holds, the nodes kubespray touched, where its Locks are, and
// its report. Planning a spec (planning.ts), carrying a plan out (carrying-out.ts), holding and
// releasing hosts (host-hold.ts) and tearing down (tear-down.ts) read and change it; it is carried
// into the next run when the workflow continues as new.
import type { Playbook, ProvisioningRef } from '../../shared/contracts/provisioning.js';
import type { HostNamespaces } from '../../shared/bpa-api.js';
import type { ResourceStatusState } from '../kit/resource-status.js';
import type { ProvisioningNode } from './nodes.js';
import type { InstalledCluster } from './plans.js';
import { ProvisioningReport } from './report.js';

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
  /** The installer key lines it authorized on hosts (absent from a 0.x run: none recorded). */
  installerKeys?: string[];
}

export class Provisioner {
  cluster: string;
  generation = 0;
  /** Plans started: Events of one try are one Event each, a retry's are new ones. */
  tries = 0;
  readonly report: ProvisioningReport;
  /** The last plan was refused only for hosts that are not free now: a host freeing up may do. */
  waitsForHost = false;
  installed: InstalledCluster | undefined;
  /** The nodes whose hosts it holds (claimed and locked). */
  held: ProvisioningNode[] = [];
  /** Nodes kubespray ran on and no reset has undone: what a delete resets. */
  touched: ProvisioningNode[] = [];
  kubeconfigSecret: string | undefined;
  /** Every namespace it ever locked a host in: where its Locks may be. */
  readonly lockedIn = new Set<string>();
  /** The last kubespray run that succeeded, and where its log is. */
  lastRun: { playbook: Playbook; log: string } | undefined;
  readonly consumer: string;
  /** Where the last plan looked for hosts. */
  searched: HostNamespaces | undefined;
  /** The installer key lines it authorized on hosts: what it takes back. */
  installerKeys: string[] = [];

  constructor(
    readonly ref: ProvisioningRef,
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
      lockedIn: this.lockedInSorted(),
      ...(this.lastRun ? { lastRun: this.lastRun } : {}),
      status: this.report.state,
      ...(this.installerKeys.length ? { installerKeys: this.installerKeys } : {}),
    };
  }

  /** Installed: its cluster takes operations. */
  get isInstalled(): boolean {
    return this.installed !== undefined;
  }

  /** The namespaces its Locks may be in, in a fixed order. */
  lockedInSorted(): string[] {
    return [...this.lockedIn].sort();
  }
}
