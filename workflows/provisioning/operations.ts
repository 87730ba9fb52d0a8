// The ClusterOperations of one Provisioning in runs from before v19 (since, operation-line.ts):
// queued in creation order as the bridge reports them, run one at a time as this workflow's
// children, never beside a change of the Provisioning's own spec (the workflow's loop does one
// thing at a time), with the Provisioning locked against updates and deletion while one runs.
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  executeChild,
  isCancellation,
  patched,
} from '@temporalio/workflow';
import {
  clusterOperationStart,
  type ClusterOperationObservation,
  type ClusterOperationOutcome,
} from '../../shared/contracts/cluster-operation.js';
import { DEFAULT_OPERATION_HISTORY } from '../../shared/cluster-operation-api.js';
import {
  checkOperationLimits,
  MAX_QUEUED_OPERATIONS,
} from '../../shared/cluster-operation-limits.js';
import { RETRY_ANNOTATION } from '../../shared/bpa-api.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { innermostMessage } from '../../shared/failures.js';
import type { clusterOperationWorkflow } from '../cluster-operation/operation.js';
import { holdForOperation } from './host-hold.js';
import { operationTarget } from './kubespray.js';
import { pruneOperations } from './operation-history.js';
import type { OperationWait } from './operation-wait.js';
import { OperationsReport } from './operations-report.js';
import type { Provisioner } from './provisioner.js';
import type { ProvisioningReport } from './report.js';

/** v9: the Provisioning's workflow runs its ClusterOperations. */
export const PATCH_OPERATIONS = 'provisioning-cluster-operations';

/** v11: ended operations beyond the Provisioning's operationHistoryLimit go, with their logs. */
export const PATCH_OPERATION_HISTORY = 'provisioning-operation-history';

/**
 * v12: a queued operation's place is said again whenever the line moves (one starts, one joins
 * ahead of it, one ahead of it is deleted), and its message names the operation running.
 */
export const PATCH_OPERATION_PLACES = 'provisioning-operation-places';

/**
 * v17: an operation is refused at once, nothing run, when MAX_QUEUED_OPERATIONS already wait or
 * its spec is too large (shared/cluster-operation-limits.ts): the line and what it holds are
 * bounded, and so is what the workflow carries across continue-as-new.
 */
export const PATCH_OPERATIONS_BOUNDED = 'provisioning-operations-bounded';

/**
 * Operations that ended and retries taken, remembered so a relist that still shows an operation
 * running, or a retry it has not seen taken yet, does not run it again.
 */
const ENDED_KEPT = 50;

/** What the next run picks up. */
export interface OperationsState {
  queued: ClusterOperationObservation[];
  ended: string[];
  /** The `kube_version` the last upgrade set. */
  kubeVersion?: string;
}

export class Operations {
  private queued: ClusterOperationObservation[];
  private ended: string[];
  private kubeVersion: string | undefined;
  private running: { uid: string; name: string; scope: CancellationScope } | undefined;
  /** Why they wait, as the queued operations were last told. */
  private told: string | undefined;
  /** How many were ahead of each queued operation (by uid), as its status last said (v12). */
  private placed = new Map<string, number>();
  private readonly report: OperationsReport;

  /**
   * @param toldApart (v18) queued operations are told by the OperationTeller, through activities
   * whose results are history events, not by the main loop
   */
  constructor(
    private readonly ref: ProvisioningRef,
    carried?: OperationsState,
    readonly toldApart = false,
  ) {
    this.report = new OperationsReport(ref, toldApart);
    this.queued = carried?.queued ?? [];
    this.ended = carried?.ended ?? [];
    this.kubeVersion = carried?.kubeVersion;
  }

  state(): OperationsState {
    return {
      queued: this.queued,
      ended: this.ended,
      ...(this.kubeVersion ? { kubeVersion: this.kubeVersion } : {}),
    };
  }

  /** One is waiting for its turn. */
  get waiting(): boolean {
    return this.queued.length > 0;
  }

  /**
   * Takes in what the bridge saw: queues a new operation, or a Failed one on-call asked to retry
   * (its place in line, to say), or refuses it (v17: why, to say); forgets a deleted one that
   * waits, and cancels one that runs.
   */
  observe(seen: ClusterOperationObservation): number | { refused: string } | undefined {
    const { uid } = seen;
    if (seen.deleting) {
      if (this.running?.uid === uid) this.running.scope.cancel();
      this.queued = this.queued.filter((op) => op.uid !== uid);
      this.placed.delete(uid);
      return undefined;
    }
    if (this.running?.uid === uid || this.queued.some((op) => op.uid === uid)) return undefined;
    if (seen.ended) {
      // Each retry value runs it once more, from the step that failed.
      const { retry } = seen;
      const asked = seen.ended === 'Failed' && retry && retry !== seen.retried;
      if (!asked || this.ended.includes(`${uid}@${retry}`)) return undefined;
      this.remember(`${uid}@${retry}`);
    } else if (this.ended.includes(uid)) {
      return undefined;
    }
    const refused = this.refusal(seen);
    if (refused) {
      this.remember(uid);
      return { refused };
    }
    this.queued.push(seen);
    this.queued.sort(
      (a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name),
    );
    return this.queued.findIndex((op) => op.uid === uid);
  }

  /** Why `seen` may not join the line (v17); asks the patch only then, so older runs replay. */
  private refusal(seen: ClusterOperationObservation): string | undefined {
    const problems = checkOperationLimits(seen.spec, seen.specBytes);
    const waiting = this.queued.length;
    if (waiting >= MAX_QUEUED_OPERATIONS) {
      problems.push(
        `${waiting} operations already wait for their turn on Provisioning ${this.ref.name}, ` +
          'the most that may: ' +
          `set the annotation ${RETRY_ANNOTATION} to queue it again once fewer wait`,
      );
    }
    return problems.length && patched(PATCH_OPERATIONS_BOUNDED) ? problems.join('; ') : undefined;
  }

  /** A refused operation's status and Event: it has ended, nothing run. */
  async sayRefused(seen: ClusterOperationObservation, why: string): Promise<void> {
    await this.report.refused(seen, why);
  }

  /**
   * Says in a queued operation's status where it is in line, and what it waits for: its turn on
   * `waitsFor`, or (v10) why even the first in line cannot start yet.
   */
  async sayQueued(
    seen: ClusterOperationObservation,
    ahead: number,
    waitsFor: string,
    wait?: OperationWait,
  ): Promise<void> {
    this.placed.set(seen.uid, ahead);
    const running = this.running && patched(PATCH_OPERATION_PLACES) ? this.running.name : '';
    await this.report.queued(seen, { ahead, running, waitsFor, wait });
  }

  /** `wait` says why they wait, and they have not been told it. */
  isNewWhy(wait: OperationWait | undefined): boolean {
    return !!wait && wait.why !== this.told;
  }

  /** One queued operation's place is not the one its status last said. */
  placesMoved(): boolean {
    return this.queued.some((seen, ahead) => this.placed.get(seen.uid) !== ahead);
  }

  /** Tells every queued operation why they wait, when that is new to them. */
  async sayWaiting(waitsFor: string, wait: OperationWait | undefined): Promise<void> {
    if (!this.isNewWhy(wait)) return;
    this.told = wait!.why;
    for (const [ahead, seen] of this.queued.entries()) {
      await this.sayQueued(seen, ahead, waitsFor, wait);
    }
  }

  /**
   * Tells each queued operation its new place, when the line moved since its status said it
   * (v12): one started, one joined the line ahead of it, or one ahead of it was deleted.
   */
  async sayPlaces(waitsFor: string, wait: () => OperationWait | undefined): Promise<void> {
    if (!patched(PATCH_OPERATION_PLACES)) return;
    const moved = [...this.queued.entries()].filter(
      ([ahead, seen]) => this.placed.get(seen.uid) !== ahead,
    );
    // Asked only when one is to be told: asking checks a patch, which must replay where it ran.
    const why = moved.length ? wait() : undefined;
    for (const [ahead, seen] of moved) await this.sayQueued(seen, ahead, waitsFor, why);
  }

  /**
   * Runs the first in line as this workflow's child, with the Provisioning locked meanwhile;
   * then keeps only the newest `keep` ended operations.
   */
  async runNext(provisioner: Provisioner, keep = DEFAULT_OPERATION_HISTORY): Promise<void> {
    const seen = this.queued.shift()!;
    this.placed.delete(seen.uid);
    this.told = undefined;
    const target = operationTarget(provisioner)!;
    const scope = new CancellationScope();
    this.running = { uid: seen.uid, name: seen.name, scope };
    // The rest wait for their turn, one place nearer (v18: the teller tells them).
    if (!this.toldApart) await this.sayPlaces(`cluster ${target.cluster}`, () => undefined);
    const start = clusterOperationStart({
      namespace: this.ref.namespace,
      name: seen.name,
      uid: seen.uid,
      spec: seen.spec,
      target,
      ...(seen.ended && seen.retry
        ? { resume: { from: seen.failedStep ?? '', retry: seen.retry } }
        : {}),
    });
    await holdForOperation(
      provisioner,
      `ClusterOperation ${seen.name} (${seen.spec.action}) is running on cluster ` +
        `${target.cluster}: change or delete the Provisioning when it has ended`,
    );
    let outcome: ClusterOperationOutcome;
    try {
      outcome = await scope.run(() =>
        executeChild<typeof clusterOperationWorkflow>(start.workflowType, {
          ...start,
          // A deleted operation's playbook is stopped, and its status written, before it ends.
          cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
        }),
      );
    } catch (err) {
      if (isCancellation(err)) {
        // Deleted while it ran: its workflow stopped the playbook and said so before it ended.
        outcome = {
          phase: 'Cancelled',
          message:
            'deleted while it ran: its playbook was stopped, and the hosts are as it left them',
        };
      } else {
        // Its workflow ended without an outcome (terminated by hand, say).
        const message = `its workflow ended without an outcome: ${innermostMessage(err)}`;
        outcome = { phase: 'Failed', message };
        await this.report.failed(seen, message);
      }
    } finally {
      this.running = undefined;
      this.remember(seen.uid);
      await CancellationScope.nonCancellable(() => holdForOperation(provisioner));
    }
    await this.note(provisioner.report, seen, outcome);
    if (patched(PATCH_OPERATION_HISTORY)) {
      await pruneOperations({ provisioning: this.ref, ran: this.ended, keep }, target.cluster);
    }
  }

  /** Operations still waiting when the Provisioning goes: said in each one's status. */
  async dropAll(why: string): Promise<void> {
    for (const seen of this.queued) {
      await this.report.failed(seen, `Nothing was run: ${why}.`);
      this.remember(seen.uid);
    }
    this.queued = [];
  }

  /** The Provisioning's status keeps the last operation, and the version an upgrade set. */
  private async note(
    report: ProvisioningReport,
    seen: ClusterOperationObservation,
    outcome: ClusterOperationOutcome,
  ) {
    const before = this.kubeVersion;
    if (outcome.kubeVersion) this.kubeVersion = outcome.kubeVersion;
    await report.lastOperation({ name: seen.name, action: seen.spec.action }, outcome, {
      before,
      now: this.kubeVersion,
    });
  }

  /** An operation (uid) that ended, or a retry (uid@value) that was taken. */
  private remember(key: string): void {
    if (!this.ended.includes(key)) this.ended = [...this.ended, key].slice(-ENDED_KEPT);
  }
}
