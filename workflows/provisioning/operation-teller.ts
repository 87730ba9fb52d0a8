// Telling waiting ClusterOperations where they stand. The handlers only record; this one coroutine
// tells each waiting operation its place in line and why they wait, by a signal to the
// operation's own workflow, which writes its status: a command whose result is an event in the
// history, so it may run beside the main loop's local activities, even while a plan or an
// operation runs (docs/architecture.md, "Local activities: one coroutine at a time"). The loop
// gives a turn only once the teller is idle, so a place is never said over a run.
import { condition, isCancellation, log } from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import type { OperationLine } from './operation-line.js';
import type { OperationWait } from './operation-wait.js';

export class OperationTeller {
  /** Why waiting operations cannot start now, as the main loop last found. */
  private wait: OperationWait | undefined;
  private busy = false;

  constructor(
    private readonly operations: OperationLine,
    private readonly waitsFor: () => string,
    private readonly waitNow: () => OperationWait | undefined,
  ) {}

  /** The main loop's part: why the waiting operations wait, told when it is new to them. */
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
    return this.operations.isNewWhy(this.wait) || this.operations.placesMoved();
  }

  private async tell(): Promise<void> {
    await this.operations.sayWaiting(this.waitsFor(), this.wait);
    await this.operations.sayPlaces(this.waitsFor(), this.waitNow);
  }
}
