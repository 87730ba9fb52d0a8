// The small state the Provisioning workflow's loop (provisioning.ts) turns over: what the bridge
// last saw, why the loop waits (a failed step, a refusal), the spec change it carries out, and its
// parts: the Provisioner (what it knows of its cluster), the line of its ClusterOperations and
// their teller. Its methods decide without waiting, or hand back the promise of the one call they
// make, so the loop awaits each step itself (dropOperations alone waits inside, as it always did).
import { condition, setHandler } from '@temporalio/workflow';
import {
  provisioningObserved,
  type ProvisioningInput,
  type ProvisioningObservation,
} from '../../shared/contracts/provisioning.js';
import { historyFull } from '../history-limit.js';
import { newBuildCurrent } from '../kit/new-build.js';
import { backoffMs } from '../kit/retry.js';
import { sayHostsFreed } from './notices.js';
import { operationWait, type OperationWait } from './operation-wait.js';
import type { LineState, OperationsState } from './line-state.js';
import { OperationLine } from './operation-line.js';
import { OperationTeller } from './operation-teller.js';
import type { Plan } from './plans.js';
import { Provisioner, type ProvisionerState } from './provisioner.js';

const HOST_LOOK_FIRST_MS = 20_000;
const HOST_LOOK_MAX_MS = 10 * 60_000;

/**
 * Why the workflow waits: a plan that failed at a step, or a spec it refused (`looks`: how often
 * it looked again for hosts that were not free).
 */
type Stuck =
  { plan: Plan; at: number; retry?: string } | { refused: true; retry?: string; looks?: number };

/**
 * What the next run picks up: the last observation, why it waits, and what it knows. `operations`
 * is its line's, or (carried by a 0.x run that ran its operations as children) the operations that run had queued.
 */
export interface Carried {
  latest: ProvisioningObservation;
  stuck?: Stuck;
  provisioner: ProvisionerState;
  operations?: OperationsState | LineState;
}

/** The newest the bridge saw: a newer generation, the deletion, or a retry asked for. */
export class Observed {
  latest: ProvisioningObservation | undefined;

  constructor(carried: ProvisioningObservation | undefined) {
    this.latest = carried;
    setHandler(provisioningObserved, (seen) => {
      const latest = this.latest;
      if (latest?.deleting) return;
      const newer = !latest || seen.deleting || seen.generation > latest.generation;
      const retried =
        latest && seen.generation === latest.generation && seen.retry !== latest.retry;
      if (newer || retried) this.latest = seen;
    });
  }
}

export class LoopState {
  readonly provisioner: Provisioner;
  /** Each ClusterOperation has its own workflow: this keeps their line. */
  readonly operations: OperationLine;
  /** The handlers record; the teller tells the line, and the loop gives turns. */
  readonly teller: OperationTeller;
  stuck: Stuck | undefined;
  /** The spec change it is carrying out, if any: operations wait for it. */
  changing: string | undefined;
  /**
   * Set once it first asks why operations wait; until then none has waited in this run, and
   * there was nothing to say why of.
   */
  private saysWhy = false;

  constructor(
    private readonly input: ProvisioningInput,
    private readonly observed: Observed,
    carried: Carried | undefined,
  ) {
    const { namespace, name } = input;
    const ref = { namespace, name, uid: this.latest.uid };
    this.provisioner = new Provisioner(ref, this.latest.cluster ?? '', carried?.provisioner);
    this.stuck = carried?.stuck;
    this.operations = new OperationLine(ref, carried?.operations);
    this.teller = new OperationTeller(
      this.operations,
      () => this.waitsFor(),
      () => this.wait(),
    );
  }

  /** The newest observation (there is one before the loop starts). */
  get latest(): ProvisioningObservation {
    return this.observed.latest!;
  }

  /** How often it looked again for free hosts, when it waits for one (else undefined). */
  looksForHosts(): number | undefined {
    const { stuck } = this;
    if (!stuck || !('refused' in stuck) || stuck.looks === undefined) return undefined;
    return stuck.looks;
  }

  /** Why the waiting operations cannot start now, if any wait. */
  whyOperationsWait(): OperationWait | undefined {
    return this.operations.waiting ? this.wait() : undefined;
  }

  /**
   * Waits for a change, a full history, an operation due or the line to move; with `looks`, no
   * longer than the next look for free hosts, with `wakeAt`, than the window opening. False when
   * the time ran out first.
   */
  change(looks: number | undefined, wakeAt: number | undefined): Promise<boolean> {
    // An operation came or went meanwhile: look again at why they wait, and until when.
    const waiting = this.operations.waiting;
    const queueMoved = () => this.saysWhy && this.operations.waiting !== waiting;
    const due = () => this.changed() || this.full() || this.operationDue() || queueMoved();
    return looks === undefined && wakeAt === undefined
      ? condition(due).then(() => true)
      : condition(
          due,
          looks !== undefined
            ? backoffMs(looks + 1, HOST_LOOK_MAX_MS, HOST_LOOK_FIRST_MS)
            : Math.max(1, wakeAt! - Date.now()),
        );
  }

  /** Deleted, a new generation, or on-call asked to retry. */
  changed(): boolean {
    const { latest, provisioner } = this;
    return latest.deleting || latest.generation !== provisioner.generation || this.retryAsked();
  }

  /**
   * An operation runs on the cluster as installed, not while a failed step waits for on-call,
   * and only in the Provisioning's maintenance window.
   */
  operationDue(): boolean {
    return (
      this.operations.waiting &&
      this.provisioner.isInstalled &&
      !this.stuck &&
      !(this.saysWhy && this.whyNow())
    );
  }

  /** Its history is near its limit, or another build is current: time to continue as new. */
  full(): boolean {
    return historyFull(this.input.maxHistory, 'provisioning') || newBuildCurrent();
  }

  /** Nothing left to tell the waiting operations, nor being told. */
  told(): boolean {
    return this.teller.idle;
  }

  /** Operations still waiting when the Provisioning goes end unrun, once the teller is done. */
  async dropOperations(why: string): Promise<void> {
    await condition(() => this.told());
    await this.operations.dropAll(why);
  }

  /** The plan that failed at a step of this generation, to resume there once on-call asks. */
  failedPlan(seen: ProvisioningObservation): { plan: Plan; at: number } | undefined {
    const { stuck } = this;
    return seen.generation === this.provisioner.generation && stuck && 'plan' in stuck
      ? stuck
      : undefined;
  }

  /** Says it resumes `failed` where it failed, as on-call asked. */
  sayRetrying(failed: { plan: Plan; at: number }, seen: ProvisioningObservation): Promise<void> {
    const { plan, at } = failed;
    return this.provisioner.report.event(
      'Normal',
      'Retrying',
      `resuming at "${plan.steps[at]!.what}" (${seen.retry ?? 'retry'})`,
    );
  }

  /** The spec was refused: it waits for a change, or (when hosts were busy) looks again. */
  stuckRefused(seen: ProvisioningObservation, lookAgain: boolean, looks: number | undefined): void {
    this.stuck = { refused: true, retry: seen.retry };
    if (this.provisioner.waitsForHost) this.stuck.looks = lookAgain ? (looks ?? 0) + 1 : 0;
  }

  /** The hosts it waited for were freed, and `plan` takes them: says so. */
  sayHostsFreed(plan: Plan, looks: number): Promise<void> {
    const { provisioner } = this;
    return sayHostsFreed(provisioner.report, {
      plan,
      cluster: provisioner.cluster,
      installed: provisioner.isInstalled,
      looks,
      searched: provisioner.searched,
    });
  }

  /** A step of `plan` failed: it waits for on-call's retry or a change of the spec. */
  stuckFailed(plan: Plan, at: number, seen: ProvisioningObservation): void {
    this.stuck = { plan, at, retry: seen.retry };
  }

  /** What the next run picks up (see Carried). */
  carried(): Carried {
    const next: Carried = { latest: this.latest, provisioner: this.provisioner.state() };
    if (this.stuck) next.stuck = this.stuck;
    next.operations = this.operations.state();
    return next;
  }

  /** What waiting operations wait for: their turn on the cluster. */
  waitsFor(): string {
    return `cluster ${this.provisioner.cluster || this.input.name}`;
  }

  /** Why they wait now. */
  wait(): OperationWait | undefined {
    this.saysWhy = true;
    return this.whyNow();
  }

  private retryAsked(): boolean {
    return this.stuck !== undefined && this.latest.retry !== this.stuck.retry;
  }

  private whyNow(): OperationWait | undefined {
    const { stuck, changing } = this;
    const window = this.latest.spec.maintenanceWindow;
    return operationWait({
      name: this.input.name,
      installed: this.provisioner.isInstalled,
      ...(changing ? { changing } : {}),
      ...(stuck
        ? { stuck: 'refused' in stuck ? 'refused' : stuck.plan.steps[stuck.at]!.what }
        : {}),
      ...(window ? { window } : {}),
      now: Date.now(),
    });
  }
}
