// The Machine workflow's activity proxies, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { CloudActivities } from '../../activities/cloud/instances.js';
import type { HostConfigActivities } from '../../activities/kubernetes/host-config.js';
import type { MachineActivities } from '../../activities/kubernetes/machines.js';
import type { NodeActivities } from '../../activities/kubernetes/nodes.js';
import type { BootstrapActivities } from '../../activities/ssh/bootstrap.js';
import { BOOT_CHECK, CLOUD_CALL, KUBE_CALL } from '../kit/activity-options.js';

/** A Machine's Kubernetes calls: its resource, its infrastructure object, its Node. */
export const machineApi = proxyLocalActivities<
  MachineActivities & NodeActivities & HostConfigActivities
>(KUBE_CALL);

/** The Machine's VM as the cloud describes it. */
export const cloudApi = proxyActivities<CloudActivities>(CLOUD_CALL);

/** Watching a running Machine's VM: a few quick tries; the watch looks again on its timer. */
export const cloudCheck = proxyActivities<CloudActivities>(BOOT_CHECK);

/**
 * Running bootstrap data on a Machine's host: SSH trouble retries with back-off (the host may
 * still be booting); the data's own failure is final. Heartbeats notice a lost worker.
 */
export const machineBootstrap = proxyActivities<BootstrapActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 10,
  },
});
