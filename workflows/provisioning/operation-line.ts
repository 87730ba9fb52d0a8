// The line of ClusterOperations waiting for their turn on a Provisioning's cluster. Each
// operation has its own workflow from its creation, which asks for a turn (an update) and writes
// its own status; this keeps only the line: who is in it in creation order, telling each its
// place when the line moves, giving the first its turn with what its playbooks need, with the
// Provisioning locked meanwhile, and hearing how the turn ended. What ended, where a failed one
// stopped (so a retry resumes there) and the version an upgrade set stay in this state.
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  log,
  type SignalDefinition,
} from '@temporalio/workflow';
import { RETRY_ANNOTATION } from '../../shared/bpa-api.js';
import { DEFAULT_OPERATION_HISTORY } from '../../shared/cluster-operation-api.js';
import { MAX_QUEUED_OPERATIONS } from '../../shared/cluster-operation-limits.js';
import {
  operationDropped,
  operationPlaceMoved,
  operationTurn,
  type ClusterOperationOutcome,
  type OperationPlace,
  type OperationTicket,
  type TurnAnswer,
} from '../../shared/contracts/cluster-operation.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { innermostMessage } from '../../shared/failures.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { operationWorkflows } from './activity-proxies.js';
import { holdForOperation } from './host-hold.js';
import { operationTarget } from './kubespray.js';
import { pruneOperations } from './operation-history.js';
import type { OperationWait } from './operation-wait.js';
import { lineStateOf, type LineState, type OperationsState } from './line-state.js';
import type { Provisioner } from './provisioner.js';

/** Operations that ended, and retries taken, remembered so none is given a second turn. */
const ENDED_KEPT = 50;
/** How often a turn that has not ended looks whether its operation's workflow still runs. */
const TURN_CHECK = '5 minutes';

/** What the Provisioning is now, for an operation asking to join. */
export interface LineNow {
  cluster: string;
  waitsFor: string;
  wait: OperationWait | undefined;
  /** Why none may join (its Provisioning is being deleted), if so. */
  closed?: string;
}

export class OperationLine {
  private queued: OperationTicket[];
  private ended: string[];
  private kubeVersion: string | undefined;
  private failedSteps: Record<string, string>;
  private running: OperationTicket | undefined;
  private outcome: ClusterOperationOutcome | undefined;
  /** Why they wait, as the line was last told. */
  private told: string | undefined;
  /** How many were ahead of each waiting operation (by uid), as it was last told. */
  private placed = new Map<string, number>();

  constructor(
    private readonly ref: ProvisioningRef,
    /** Its own last run's, or what a 0.x run that ran its operations as children carried over (line-state.ts). */
    carried?: LineState | OperationsState,
  ) {
    const state = lineStateOf(carried);
    this.queued = state.queued;
    this.ended = state.ended;
    this.kubeVersion = state.kubeVersion;
    this.failedSteps = state.failedSteps ?? {};
  }

  state(): LineState {
    return {
      queued: this.queued,
      ended: this.ended,
      ...(this.kubeVersion ? { kubeVersion: this.kubeVersion } : {}),
      ...(Object.keys(this.failedSteps).length ? { failedSteps: this.failedSteps } : {}),
    };
  }

  /** One is waiting for its turn. */
  get waiting(): boolean {
    return this.queued.length > 0;
  }

  /** The update handler's part: takes `ticket` into the line, or says why not. Idempotent. */
  join(ticket: OperationTicket, now: LineNow): TurnAnswer {
    const { uid, retry } = ticket;
    const key = retry ? `${uid}@${retry}` : uid;
    if (this.ended.includes(key) || (!retry && this.running?.uid === uid)) return { ran: true };
    let ahead = this.queued.findIndex((op) => op.uid === uid);
    if (ahead < 0) {
      const refused = now.closed ?? this.full();
      if (refused) {
        // Refused once for each retry value: a run started again for it is told it ran.
        this.remember(key);
        return { refused };
      }
      this.queued.push(ticket);
      this.queued.sort(
        (a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name),
      );
      ahead = this.queued.findIndex((op) => op.uid === uid);
    }
    // It says this place itself, from the answer; those behind it are told they moved.
    this.placed.set(uid, ahead);
    return { cluster: now.cluster, ...this.place(ahead, now.waitsFor, now.wait) };
  }

  /** Why none may join: the line is as long as it may be. */
  private full(): string | undefined {
    const waiting = this.queued.length;
    if (waiting < MAX_QUEUED_OPERATIONS) return undefined;
    return (
      `${waiting} operations already wait for their turn on Provisioning ${this.ref.name}, ` +
      `the most that may: set the annotation ${RETRY_ANNOTATION} to queue it again once fewer wait`
    );
  }

  /** A waiting operation was deleted: it leaves the line (those behind are told). */
  leave(uid: string): void {
    this.queued = this.queued.filter((op) => op.uid !== uid);
    this.placed.delete(uid);
  }

  /** The operation with the turn says how it ended. */
  turnEnded(uid: string, outcome: ClusterOperationOutcome): void {
    if (this.running?.uid === uid) this.outcome = outcome;
  }

  /** `wait` says why they wait, and they have not been told it. */
  isNewWhy(wait: OperationWait | undefined): boolean {
    return !!wait && wait.why !== this.told;
  }

  /** One waiting operation's place is not the one it was last told. */
  placesMoved(): boolean {
    return this.queued.some((op, ahead) => this.placed.get(op.uid) !== ahead);
  }

  /** Tells every waiting operation why they wait, when that is new to them. */
  async sayWaiting(waitsFor: string, wait: OperationWait | undefined): Promise<void> {
    if (!this.isNewWhy(wait)) return;
    this.told = wait!.why;
    for (const [ahead, op] of [...this.queued.entries()]) {
      await this.tell(op, ahead, waitsFor, wait);
    }
  }

  /** Tells each waiting operation its new place, when the line moved since it was told. */
  async sayPlaces(waitsFor: string, wait: () => OperationWait | undefined): Promise<void> {
    const moved = [...this.queued.entries()].filter(
      ([ahead, op]) => this.placed.get(op.uid) !== ahead,
    );
    const why = moved.length ? wait() : undefined;
    for (const [ahead, op] of moved) await this.tell(op, ahead, waitsFor, why);
  }

  /**
   * Gives the first in line its turn, with the Provisioning locked until the turn ends; then
   * notes the outcome and keeps only the newest `keep` ended operations.
   */
  async runNext(provisioner: Provisioner, keep = DEFAULT_OPERATION_HISTORY): Promise<void> {
    const op = this.queued.shift()!;
    this.placed.delete(op.uid);
    this.told = undefined;
    const target = operationTarget(provisioner)!;
    this.running = op;
    this.outcome = undefined;
    await holdForOperation(
      provisioner,
      `ClusterOperation ${op.name} (${op.action}) is running on cluster ` +
        `${target.cluster}: change or delete the Provisioning when it has ended`,
    );
    let outcome: ClusterOperationOutcome;
    try {
      const from = op.retry ? this.failedSteps[op.uid] : undefined;
      await getExternalWorkflowHandle(this.workflowId(op)).signal(operationTurn, {
        target,
        ...(from !== undefined ? { from } : {}),
      });
      outcome = await this.turnOutcome(op);
    } catch (err) {
      if (CancellationScope.current().consideredCancelled) throw err;
      const message = `its workflow ended without an outcome: ${innermostMessage(err)}`;
      outcome = { phase: 'Failed', message };
    } finally {
      this.running = undefined;
      this.remember(op.retry ? `${op.uid}@${op.retry}` : op.uid);
      await CancellationScope.nonCancellable(() => holdForOperation(provisioner));
    }
    delete this.failedSteps[op.uid];
    if (outcome.phase === 'Failed' && outcome.failedStep) {
      this.failedSteps[op.uid] = outcome.failedStep;
    }
    const before = this.kubeVersion;
    if (outcome.kubeVersion) this.kubeVersion = outcome.kubeVersion;
    await provisioner.report.lastOperation({ name: op.name, action: op.action }, outcome, {
      before,
      now: this.kubeVersion,
    });
    const ran = this.ended.map((key) => key.replace(/@.*$/, ''));
    await pruneOperations({ provisioning: this.ref, ran, keep }, target.cluster);
  }

  /** Operations still waiting when the Provisioning goes: each is told it will not run. */
  async dropAll(why: string): Promise<void> {
    for (const op of this.queued.splice(0)) {
      this.remember(op.uid);
      await this.signal(op, operationDropped, { why });
    }
    this.placed.clear();
  }

  /** The outcome its workflow tells; or, should that workflow end without telling, a failure. */
  private async turnOutcome(op: OperationTicket): Promise<ClusterOperationOutcome> {
    for (;;) {
      if (await condition(() => this.outcome !== undefined, TURN_CHECK)) return this.outcome!;
      const id = this.workflowId(op);
      const closed = await operationWorkflows.closedWorkflows({ workflowIds: [id] });
      if (closed.length && this.outcome === undefined) {
        return { phase: 'Failed', message: 'its workflow ended without an outcome' };
      }
    }
  }

  private place(ahead: number, waitsFor: string, wait: OperationWait | undefined) {
    const place: OperationPlace = { ahead, waitsFor };
    if (this.running) place.running = this.running.name;
    if (wait)
      place.wait = wait.opensAt ? { why: wait.why, opensAt: wait.opensAt } : { why: wait.why };
    return place;
  }

  private async tell(
    op: OperationTicket,
    ahead: number,
    waitsFor: string,
    wait: OperationWait | undefined,
  ): Promise<void> {
    this.placed.set(op.uid, ahead);
    await this.signal(op, operationPlaceMoved, this.place(ahead, waitsFor, wait));
  }

  /** Signals an operation's workflow; one whose workflow is gone leaves the line. */
  private async signal<A>(
    op: OperationTicket,
    signal: SignalDefinition<[A]>,
    arg: A,
  ): Promise<void> {
    try {
      await getExternalWorkflowHandle(this.workflowId(op)).signal(signal, arg);
    } catch (err) {
      if (CancellationScope.current().consideredCancelled) throw err;
      log.warn('a waiting cluster operation has no workflow: it leaves the line', {
        operation: op.name,
        error: innermostMessage(err),
      });
      this.leave(op.uid);
    }
  }

  private workflowId(op: OperationTicket): string {
    return WORKFLOW_ID.clusterOperation(this.ref.namespace, op.name);
  }

  /** An operation (uid) that ended, or a retry (uid@value) that was taken. */
  private remember(key: string): void {
    if (!this.ended.includes(key)) this.ended = [...this.ended, key].slice(-ENDED_KEPT);
    // Where an operation failed is kept as long as it is remembered: the state stays bounded.
    const kept = new Set(this.ended.map((ended) => ended.replace(/@.*$/, '')));
    for (const uid of Object.keys(this.failedSteps)) {
      if (!kept.has(uid)) delete this.failedSteps[uid];
    }
  }
}
