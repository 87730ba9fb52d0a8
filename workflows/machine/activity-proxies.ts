// The HostflowMachine workflow's activity proxies, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { CloudActivities } from '../../activities/cloud/instances.js';
import type { HostConfigActivities } from '../../activities/kubernetes/host-config.js';
import type { MachineActivities } from '../../activities/kubernetes/machines.js';
import type { BootstrapActivities } from '../../activities/ssh/bootstrap.js';
import { BOOT_CHECK, CLOUD_CALL, KUBE_CALL } from '../kit/activity-options.js';

/** Its Kubernetes calls: the HostflowMachine, its owner Machine and Cluster, host-config. */
export const machineApi = proxyLocalActivities<MachineActivities & HostConfigActivities>(KUBE_CALL);

/** The VM as the cloud describes it. */
export const cloudApi = proxyActivities<CloudActivities>(CLOUD_CALL);

/** Watching a provisioned VM: a few quick tries; the watch looks again on its timer. */
export const cloudCheck = proxyActivities<CloudActivities>(BOOT_CHECK);

/**
 * Running bootstrap data on the host: SSH trouble retries with back-off (the host may still be
 * booting); the data's own failure is final. Heartbeats notice a lost worker.
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
