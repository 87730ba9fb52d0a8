// Timeouts and retries that more than one family (or the kit) gives its activity proxies, each
// written once. A family's own proxies sit beside its workflow (`<family>/activity-proxies.ts`); an
// option set only one family uses stays in that family's file.
import type { ActivityOptions, LocalActivityOptions, RetryPolicy } from '@temporalio/workflow';

/**
 * A short Kubernetes call, run as a local activity: in the worker, within the workflow task,
 * without a round trip through the server per call. A few quick retries absorb a blip; a longer
 * outage is waited out by the workflow on timers, saying so (kit/retry.ts).
 */
export const KUBE_CALL: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 5,
  },
};

/**
 * A BPA resource's Kubernetes call (a Provisioning's, a Software's, a BPA Cluster's: status,
 * Events, finalizer, hosts), local like KUBE_CALL but retried longer inside the activity.
 */
export const RESOURCE_CALL: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 10,
  },
};

/**
 * A cloud API call: throttling and 5xx retry with back-off; a bad config fails at once. Each is
 * one short call, so a call lost with its worker is retried after 30 seconds.
 */
export const CLOUD_CALL: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 8,
  },
};

/** A few quick tries for a look the workflow takes again later on its own timer anyway. */
export const FEW_TRIES: RetryPolicy = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumAttempts: 3,
};

/** Checking on a booting VM: a few quick tries; the boot wait tries again on its own timer. */
export const BOOT_CHECK: ActivityOptions = { startToCloseTimeout: '30 seconds', retry: FEW_TRIES };

/** Looking at other workflows from the worker (visibility, descriptions, signals). */
export const WORKFLOW_LOOKUP: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
};

/** A request to platforms' allocators (a slot, a host-config change): tried with no limit. */
export const ALLOCATOR_CALL: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
};

/**
 * Telling an allocator something from the worker (a signal sent by the client), as a local
 * activity: a few quick tries, then the sender goes on (what it said is best effort).
 */
export const ALLOCATOR_MAIL: LocalActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumAttempts: 4 },
};
