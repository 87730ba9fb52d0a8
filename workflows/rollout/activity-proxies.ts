// The OS image rollout's activity proxies, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { MachineConfigPoolActivities } from '../../activities/kubernetes/machine-config-pools.js';
import type { NodeActivities } from '../../activities/kubernetes/nodes.js';
import type { ImageLabelActivities } from '../../activities/registry/image-labels.js';
import type { OsImageActivities } from '../../activities/ssh/os-image.js';
import { FEW_TRIES, KUBE_CALL } from '../kit/activity-options.js';

/** A rollout's Kubernetes calls: its pool, the pool's Nodes, their annotations and Events. */
export const poolApi = proxyLocalActivities<MachineConfigPoolActivities & NodeActivities>(
  KUBE_CALL,
);

/**
 * `rpm-ostree rebase` pulls the image on the node: minutes. A failure retries with back-off, as
 * MCO's daemon does, then degrades the node.
 */
export const osRebase = proxyActivities<OsImageActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 4,
  },
});

/** A reboot request and a look at what booted: short; the workflow asks again on its timer. */
export const osCheck = proxyActivities<OsImageActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumAttempts: 2 },
});

/** Asking a registry about an image, for preflight: a few tries; preflight runs again later. */
export const registryApi = proxyActivities<ImageLabelActivities>({
  startToCloseTimeout: '1 minute',
  retry: FEW_TRIES,
});
