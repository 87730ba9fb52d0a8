// The Provisioning workflow's activity proxies, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities, type RetryPolicy } from '@temporalio/workflow';
import type { PlaybookActivities } from '../../activities/ansible/playbook.js';
import type { DhcpActivities } from '../../activities/dhcp/leases.js';
import type { BareMetalHostActivities } from '../../activities/kubernetes/baremetalhosts.js';
import type { ProvisioningActivities } from '../../activities/kubernetes/provisionings.js';
import type { InstallerKeyActivities } from '../../activities/ssh/installer-key.js';
import type { TemporalActivities } from '../../activities/temporal/workflows.js';
import { ALLOCATOR_CALL, RESOURCE_CALL } from '../kit/activity-options.js';

/** A kubespray run that fails is tried again a few times, from its start. */
const PLAYBOOK_RETRY: RetryPolicy = {
  initialInterval: '10 seconds',
  backoffCoefficient: 2,
  maximumAttempts: 5,
};

/** A Provisioning's Kubernetes calls: its resource, its hosts, what it leaves next to them. */
export const provisioningApi = proxyLocalActivities<
  ProvisioningActivities & BareMetalHostActivities
>(RESOURCE_CALL);

/** The IPs the DHCP server leased to the hosts' MACs. */
export const dhcpApi = proxyLocalActivities<DhcpActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** Handing out a cluster's installer key: a host that is still booting is tried for a while. */
export const installerKey = proxyActivities<InstallerKeyActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 6 },
});

/**
 * A kubespray run takes as long as it takes: it heartbeats every 5 seconds, so a worker lost
 * mid-playbook is noticed in 30 seconds and the run resumes on another.
 */
export const playbooks = proxyActivities<PlaybookActivities>({
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '30 seconds',
  retry: PLAYBOOK_RETRY,
});

/** Whether the worker can run a Provisioning's kubespray release: a file read and `--version`. */
export const kubesprayCheck = proxyActivities<Pick<PlaybookActivities, 'checkKubespray'>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 5 },
});

/** Whether the operation that has the turn still has a running workflow. */
export const operationWorkflows =
  proxyActivities<Pick<TemporalActivities, 'closedWorkflows'>>(ALLOCATOR_CALL);
