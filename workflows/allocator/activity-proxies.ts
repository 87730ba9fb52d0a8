// The allocator's activity proxies, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { CloudActivities } from '../../activities/cloud/instances.js';
import type { HostConfigActivities } from '../../activities/kubernetes/host-config.js';
import type { SshActivities } from '../../activities/ssh/build-users.js';
import type { TemporalActivities } from '../../activities/temporal/workflows.js';
import { CLOUD_CALL, KUBE_CALL, WORKFLOW_LOOKUP } from '../kit/activity-options.js';

/** The platform's hosts and cloud pool, read from host-config. */
export const hostConfigApi = proxyLocalActivities<HostConfigActivities>(KUBE_CALL);

/** The TaskRuns and other workflows that hold (or held) the platform's slots. */
export const temporalApi = proxyActivities<TemporalActivities>(WORKFLOW_LOOKUP);

/** The pool's VMs as the cloud lists them. */
export const cloudApi = proxyActivities<CloudActivities>(CLOUD_CALL);

/** Probing a host over SSH: a probe's failure is an answer, not something to retry. */
export const hostProbe = proxyActivities<SshActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});
