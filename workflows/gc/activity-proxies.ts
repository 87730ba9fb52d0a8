// The garbage collectors' activity proxies, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities, type RetryPolicy } from '@temporalio/workflow';
import type { CloudActivities } from '../../activities/cloud/instances.js';
import type { CloudGcActivities } from '../../activities/gc/cloud-vms.js';
import type { LeftoversGcActivities } from '../../activities/gc/taskrun-leftovers.js';
import type { HostConfigActivities } from '../../activities/kubernetes/host-config.js';
import type { TemporalActivities } from '../../activities/temporal/workflows.js';
import { KUBE_CALL, WORKFLOW_LOOKUP } from '../kit/activity-options.js';

/** A failing collection is tried a few times; the next pass (every interval) tries again. */
const GC_RETRY: RetryPolicy = {
  initialInterval: '5 seconds',
  backoffCoefficient: 2,
  maximumAttempts: 3,
};

/** The cloud platforms to collect on, read from host-config. */
export const hostConfigApi = proxyLocalActivities<HostConfigActivities>(KUBE_CALL);

/** The launch keys that running workflows claim (their VMs are spared). */
export const temporalApi = proxyActivities<TemporalActivities>(WORKFLOW_LOOKUP);

/** Orphan collection lists and terminates VMs one by one: it may take a while. */
export const cloudGc = proxyActivities<CloudActivities & CloudGcActivities>({
  startToCloseTimeout: '10 minutes',
  retry: GC_RETRY,
});

/** Collecting TaskRun leftovers visits every static host over SSH: long, heartbeating. */
export const leftoversGc = proxyActivities<LeftoversGcActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '2 minutes',
  retry: GC_RETRY,
});
