// Waiting out what retrying can fix (docs/architecture.md, "Waiting out dependencies"): a call that keeps failing is tried
// again on workflow timers, with back-off, and the workflow says in its details what it waits
// for. Short retries happen inside the activity; this is the long wait, visible in the UI.
import { ApplicationFailure } from '@temporalio/common';
import { condition, isCancellation, sleep } from '@temporalio/workflow';
import { blameOf, failureType, innermostMessage } from '../../shared/failures.js';

/** The failure `untilDone` throws when what it waited for is no longer wanted. */
const NO_LONGER_WANTED = 'NoLongerWanted';
export const isNoLongerWanted = (err: unknown): boolean => failureType(err) === NO_LONGER_WANTED;

const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 60_000;

/** The wait before try `attempt + 1`: `firstMs`, doubling each time, at most `maxMs`. */
export const backoffMs = (attempt: number, maxMs = MAX_WAIT_MS, firstMs = FIRST_WAIT_MS): number =>
  Math.min(firstMs * 2 ** Math.max(0, attempt - 1), maxMs);

export interface Waiting {
  /** What the workflow is trying to do, e.g. "write the Secret". */
  what: string;
  /** The failure, in words. */
  cause: string;
  err: unknown;
  waitMs: number;
  attempt: number;
}

export interface UntilDoneOptions {
  what: string;
  /** Tells people (details, metrics) what is being waited for. */
  report: (waiting: Waiting) => void;
  /** Entities wait out everything; a TaskRun gives up on what retrying cannot fix. */
  evenFinal?: boolean;
  /**
   * False once the call's object has ended (a TaskRun deleted or completed): the wait stops
   * then, at once, with a NoLongerWanted failure. Without it the call is wanted until done.
   */
  stillWanted?: () => boolean;
}

/** Calls `call` until it succeeds; a failure retrying cannot fix is thrown unless `evenFinal`. */
export async function untilDone<T>(call: () => Promise<T>, options: UntilDoneOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (!options.evenFinal && blameOf(err) === 'final') throw err;
      const { stillWanted } = options;
      if (stillWanted) {
        if (!stillWanted()) throw noLongerWanted(options.what, err);
      }
      const waitMs = backoffMs(attempt);
      options.report({ what: options.what, cause: innermostMessage(err), err, waitMs, attempt });
      if (!stillWanted) await sleep(waitMs);
      else if (await condition(() => !stillWanted(), waitMs))
        throw noLongerWanted(options.what, err);
    }
  }
}

function noLongerWanted(what: string, err: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    message: `stopped trying to ${what}: its object has ended (last failure: ${innermostMessage(err)})`,
    type: NO_LONGER_WANTED,
    nonRetryable: true,
  });
}

/** How `untilDeadline` ended: with a try that was done, or past its deadline with the last one. */
export interface Ended<T> {
  done: boolean;
  last: T;
}

export interface UntilDeadlineOptions<T> {
  /** Whether a try's outcome ends the wait. */
  isDone: (outcome: T) => boolean;
  /** How long to keep trying; undefined: until a try is done. */
  timeoutMs: number | undefined;
  /** The wait between tries doubles from 1 s up to this. */
  maxWaitMs: number;
  /** When the deadline's clock started (default: the first try), if a step before it counts. */
  startedMs?: number;
  /** Whether the last wait is cut short to end at the deadline (default true). */
  waitEndsAtDeadline?: boolean;
  /** Told of each try not done before the deadline, before the wait that follows it. */
  onPending?: (outcome: T, attempt: number) => void | Promise<void>;
}

/**
 * Tries until a try is done or the deadline passes, with back-off between tries: the loop that
 * polls an object (a Node draining, volumes detaching) or repeats a call until it succeeds
 * (with `failureOf`). What the deadline means is the caller's: it gets the last outcome.
 */
export async function untilDeadline<T>(
  once: (attempt: number) => Promise<T>,
  options: UntilDeadlineOptions<T>,
): Promise<Ended<T>> {
  const { timeoutMs } = options;
  const started = options.startedMs ?? Date.now();
  for (let attempt = 1; ; attempt++) {
    const outcome = await once(attempt);
    if (options.isDone(outcome)) return { done: true, last: outcome };
    if (timeoutMs !== undefined && Date.now() - started >= timeoutMs) {
      return { done: false, last: outcome };
    }
    await options.onPending?.(outcome, attempt);
    const backoff = backoffMs(attempt, options.maxWaitMs);
    const cut = timeoutMs !== undefined && options.waitEndsAtDeadline !== false;
    await sleep(cut ? Math.min(backoff, Math.max(1, timeoutMs - (Date.now() - started))) : backoff);
  }
}

/** A call's failure as a value (undefined once it succeeded), for `untilDeadline`. */
export const failureOf = (call: () => Promise<unknown>): Promise<unknown> =>
  call().then(
    () => undefined,
    (err: unknown) => err ?? new Error('failed without a reason'),
  );

/** What one look of `lookUntilDone` saw: the answer, or what ends the wait before the next look. */
export type Look<T> = { done: T } | { wakeWhen: () => boolean };

/**
 * Looks until `look` has an answer: between looks it waits `backoffMs(attempt, maxWaitMs)` on a
 * timer, or less once the `wakeWhen` the last look returned is true (the object changed).
 */
export async function lookUntilDone<T>(
  look: () => Promise<Look<T>>,
  maxWaitMs: number,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const seen = await look();
    if ('done' in seen) return seen.done;
    await condition(seen.wakeWhen, backoffMs(attempt, maxWaitMs));
  }
}
