// Waiting out what retrying can fix (DESIGN.md section 5): a call that keeps failing is tried
// again on workflow timers, with back-off, and the workflow says in its details what it waits
// for. Short retries happen inside the activity; this is the long wait, visible in the UI.
import { isCancellation, patched, sleep } from '@temporalio/workflow';
import { blameOf, innermostMessage } from '../shared/failures.js';

/** v2: a call failing past its activity's own retries is waited out instead of failing the workflow. */
export const PATCH_WAIT_OUT_FAILURES = 'wait-out-failing-dependencies';

const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 60_000;

export const backoffMs = (attempt: number, maxMs = MAX_WAIT_MS): number =>
  Math.min(FIRST_WAIT_MS * 2 ** Math.max(0, attempt - 1), maxMs);

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
}

/** Calls `call` until it succeeds; a failure retrying cannot fix is thrown unless `evenFinal`. */
export async function untilDone<T>(call: () => Promise<T>, options: UntilDoneOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (isCancellation(err) || !patched(PATCH_WAIT_OUT_FAILURES)) throw err;
      if (!options.evenFinal && blameOf(err) === 'final') throw err;
      const waitMs = backoffMs(attempt);
      options.report({ what: options.what, cause: innermostMessage(err), err, waitMs, attempt });
      await sleep(waitMs);
    }
  }
}
