// Telling queued ClusterOperations where they stand. The handlers only record; this one coroutine
// tells each queued operation its place in line and why they wait: since v19 by a signal to the
// operation's own workflow, which writes its status; in v18 by writing that status itself, with
// each refusal. Either way through commands whose results are events in the history, so it may
// run beside the main loop's local activities, even while a plan or an operation runs
// (docs/architecture.md, "Local activities: one coroutine at a time"). The loop starts an
// operation only once the teller is idle, so a place is never said over a run.
import { condition, isCancellation, log } from '@temporalio/workflow';
import type { ClusterOperationObservation } from '../../shared/contracts/cluster-operation.js';
import { innermostMessage } from '../../shared/failures.js';
import type { OperationWait } from './operation-wait.js';
import type { Operations } from './operations.js';

/** What the teller tells: the line of v18 (Operations) or of v19 (OperationLine). */
export type TellableLine = Pick<
  Operations,
  'isNewWhy' | 'placesMoved' | 'sayWaiting' | 'sayPlaces'
> &
  Partial<Pick<Operations, 'sayRefused'>>;

/** v18: handlers record and the loop acts; a queued operation's status is told apart. */
export const PATCH_OPERATIONS_TOLD_APART = 'provisioning-operations-told-apart';

export class OperationTeller {
  private refusals: Array<{ seen: ClusterOperationObservation; why: string }> = [];
  /** Why queued operations cannot start now, as the main loop last found (v10). */
  private wait: OperationWait | undefined;
  private busy = false;

  constructor(
    private readonly operations: TellableLine,
    private readonly waitsFor: () => string,
    private readonly waitNow: () => OperationWait | undefined,
  ) {}

  /** The handler's part (v18): an operation the line refused, to tell why. */
  refuse(seen: ClusterOperationObservation, why: string): void {
    this.refusals.push({ seen, why });
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
      await this.operations.sayRefused?.(seen, why);
    }
    await this.operations.sayWaiting(this.waitsFor(), this.wait);
    await this.operations.sayPlaces(this.waitsFor(), this.waitNow);
  }
}
