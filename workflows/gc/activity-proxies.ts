// The garbage collectors' activity proxies, each with its timeout and retries.
import { proxyActivities, type RetryPolicy } from '@temporalio/workflow';
import type { CloudGcActivities } from '../../activities/gc/cloud-vms.js';
import type { LeftoversGcActivities } from '../../activities/gc/taskrun-leftovers.js';

/** A failing collection is tried a few times; the next pass (every interval) tries again. */
const GC_RETRY: RetryPolicy = {
  initialInterval: '5 seconds',
  backoffCoefficient: 2,
  maximumAttempts: 3,
};

/** Orphan collection lists and terminates VMs one by one: it may take a while. */
export const cloudGc = proxyActivities<CloudGcActivities>({
  startToCloseTimeout: '10 minutes',
  retry: GC_RETRY,
});

/** Collecting TaskRun leftovers visits every static host over SSH: long, heartbeating. */
export const leftoversGc = proxyActivities<LeftoversGcActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '2 minutes',
  retry: GC_RETRY,
});
