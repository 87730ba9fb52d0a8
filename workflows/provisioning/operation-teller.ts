// Telling queued ClusterOperations where they stand (v18). The clusterOperationObserved handler
// only records what the bridge saw; this one coroutine writes each queued operation's place in
// line, why they wait, and each refusal. It writes through activities whose results are events
// in the history, so it may run beside the main loop's local activities, even while a plan or an
// operation runs (docs/architecture.md, "Local activities: one coroutine at a time"). The loop
// starts an operation only once the teller is idle, so a place is never said over a run.
import { condition, isCancellation, log } from '@temporalio/workflow';
import type { ClusterOperationObservation } from '../../shared/contracts/cluster-operation.js';
import { innermostMessage } from '../../shared/failures.js';
import type { OperationWait } from './operation-wait.js';
import type { Operations } from './operations.js';

/** v18: handlers record and the loop acts; a queued operation's status is told apart. */
export const PATCH_OPERATIONS_TOLD_APART = 'provisioning-operations-told-apart';

export class OperationTeller {
  private refusals: Array<{ seen: ClusterOperationObservation; why: string }> = [];
  /** Why queued operations cannot start now, as the main loop last found (v10). */
  private wait: OperationWait | undefined;
  private busy = false;

  constructor(
    private readonly operations: Operations,
    private readonly waitsFor: () => string,
    private readonly waitNow: () => OperationWait | undefined,
  ) {}

  /** The handler's part: takes in what the bridge saw, and nothing else. */
  observe(seen: ClusterOperationObservation): void {
    const ahead = this.operations.observe(seen);
    if (typeof ahead === 'object') this.refusals.push({ seen, why: ahead.refused });
  }

  /** The main loop's part: why the queued operations wait, told when it is new to them. */
  waiting(wait: OperationWait | undefined): void {
    this.wait = wait;
  }

  /** Nothing to tell, and nothing being told. */
  get idle(): boolean {
    return !this.busy && !this.news();
  }

  /** Tells, for as long as the workflow runs. */
  async run(): Promise<never> {
    for (;;) {
      await condition(() => this.news());
      this.busy = true;
      try {
        await this.tell();
      } catch (err) {
        if (isCancellation(err)) throw err;
        // Said as told: the operation is told again when its place or the reason next moves.
        log.warn('could not tell a queued cluster operation', { error: innermostMessage(err) });
      } finally {
        this.busy = false;
      }
    }
  }

  private news(): boolean {
    return (
      this.refusals.length > 0 ||
      this.operations.isNewWhy(this.wait) ||
      this.operations.placesMoved()
    );
  }

  private async tell(): Promise<void> {
    for (const { seen, why } of this.refusals.splice(0)) {
      await this.operations.sayRefused(seen, why);
    }
    await this.operations.sayWaiting(this.waitsFor(), this.wait);
    await this.operations.sayPlaces(this.waitsFor(), this.waitNow);
  }
}
