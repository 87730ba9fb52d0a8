// The TaskRun workflow's activity proxies, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { DeliveryActivities } from '../../activities/delivery.js';
import type { EventActivities } from '../../activities/kubernetes/events.js';
import type { HostConfigActivities } from '../../activities/kubernetes/host-config.js';
import type { KubernetesActivities } from '../../activities/kubernetes/taskruns.js';
import type { SshActivities } from '../../activities/ssh/build-users.js';
import type { TemporalActivities } from '../../activities/temporal/workflows.js';
import { KUBE_CALL, WORKFLOW_LOOKUP } from '../kit/activity-options.js';

/** The TaskRun's Secrets and labels, and its platform resolved against host-config. */
export const taskRunApi = proxyLocalActivities<KubernetesActivities & HostConfigActivities>(
  KUBE_CALL,
);

/** Events are for people: a few tries, then the flow goes on without them. */
export const eventApi = proxyLocalActivities<EventActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumAttempts: 3 },
});

/** An earlier run of this TaskRun's workflow, to adopt what it held. */
export const temporalApi = proxyActivities<TemporalActivities>(WORKFLOW_LOOKUP);

/** Transient SSH trouble retries with back-off; after that the host counts as failed. */
export const delivery = proxyActivities<DeliveryActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 4 },
});

/**
 * Removing the build user of a served TaskRun retries until the host is back: never dropped.
 * A home full of container layers takes as long as it takes: the activity heartbeats, so a lost
 * worker is noticed in 30 s, and the generous start-to-close never cuts off a removal.
 */
export const durableCleanup = proxyActivities<SshActivities>({
  startToCloseTimeout: '12 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/**
 * Hosts that failed provisioning may never come back (a pool VM may be gone): try for about a
 * minute, then leave it to garbage collection.
 */
export const boundedCleanup = proxyActivities<SshActivities>({
  startToCloseTimeout: '12 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
});
