// Taking a VM down until the cloud confirms it is gone: a VM is never dropped while it may still
// run (and bill). Transient cloud errors are retried inside the activity; what fails it for good
// (say, the credentials Secret was deleted) is told, waited out with back-off and tried again.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { CloudActivities } from '../../activities/cloud/instances.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { innermostMessage } from '../../shared/failures.js';
import { backoffMs } from './retry.js';

/** Terminating a VM retries until the cloud confirms it: a VM is never left behind. */
const durableTerminate = proxyActivities<CloudActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '2 minutes' },
});

/** The first wait after a terminate failed for good, doubling up to the longest. */
const TERMINATE_FIRST_WAIT_MS = 10_000;
const TERMINATE_MAX_WAIT_MS = 30 * 60_000;

/** One terminate call, retried inside the activity for as long as the cloud errs transiently. */
export function terminateVm(cloud: CloudPlatform, vmId: string, summary = `Terminate VM ${vmId}`) {
  return durableTerminate.terminateInstance.executeWithOptions({ summary }, [{ cloud, id: vmId }]);
}

export interface TerminateUntilGone {
  /** Tells people (an Event, a Condition) why it failed and when it is tried again. */
  onFailure: (cause: string, waitMs: number) => Promise<void>;
}

/** Terminates the VM, trying again on a timer after each failure, until the cloud confirms. */
export async function terminateUntilGone(
  cloud: CloudPlatform,
  vmId: string,
  options: TerminateUntilGone,
): Promise<void> {
  for (let failures = 0; ; failures++) {
    try {
      await terminateVm(cloud, vmId);
      return;
    } catch (err) {
      const waitMs = backoffMs(failures + 1, TERMINATE_MAX_WAIT_MS, TERMINATE_FIRST_WAIT_MS);
      await options.onFailure(innermostMessage(err), waitMs);
      await sleep(waitMs);
    }
  }
}
