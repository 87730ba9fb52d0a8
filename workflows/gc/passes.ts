// How a garbage-collection workflow runs its passes: one at start, then one every interval, and
// one whenever a worker starts (signal collectNow); a run continues as new after PASSES_PER_RUN.
import { condition, setHandler } from '@temporalio/workflow';
import { collectNow } from '../../shared/contracts/gc.js';
import { newBuildCurrent } from '../kit/new-build.js';

const PASSES_PER_RUN = 200;

/** Runs `pass` at start, every `intervalSeconds` and on collectNow, PASSES_PER_RUN times. */
export async function collectEveryInterval(
  intervalSeconds: number,
  pass: () => Promise<void>,
): Promise<void> {
  let requested = true;
  setHandler(collectNow, () => {
    requested = true;
  });
  for (let i = 0; i < PASSES_PER_RUN; i++) {
    await condition(() => requested || newBuildCurrent(), intervalSeconds * 1000);
    if (newBuildCurrent()) return; // the caller continues as new, onto the current build
    requested = false;
    await pass();
  }
}
