// A ClusterOperation workflow's activity proxies, each with its timeout and retries.
import {
  ActivityCancellationType,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { ClusterLogActivities } from '../../activities/ansible/cluster-logs.js';
import type { PlaybookActivities } from '../../activities/ansible/playbook.js';
import type { ClusterOperationActivities } from '../../activities/kubernetes/cluster-operations.js';
import type { TemporalActivities } from '../../activities/temporal/workflows.js';
import { RESOURCE_CALL } from '../kit/activity-options.js';

/** Its status and Events. */
export const operationApi = proxyLocalActivities<ClusterOperationActivities>(RESOURCE_CALL);

/**
 * A step's playbook. A failed run is the operation's answer (PlaybookFailed is not retried); a
 * lost worker is noticed by the heartbeat and the run starts again on another. A cancel waits
 * until ansible-playbook has been stopped, so the status never says Cancelled while it runs.
 */
export const operationPlaybooks = proxyActivities<
  Pick<PlaybookActivities, 'runPlaybook' | 'runCustomAction'>
>({
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '30 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumAttempts: 5 },
});

/** Removing the logs of operations that were pruned: files on a worker, a few tries. */
export const operationLogs = proxyActivities<ClusterLogActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

/**
 * Asking its Provisioning's workflow for a turn: asked again, with back-off up to a minute, for as
 * long as that workflow does not run (`hostflow describe` shows why meanwhile: the activity's last
 * failure).
 */
export const operationTurns = proxyActivities<Pick<TemporalActivities, 'requestOperationTurn'>>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
