// Activity proxies shared by the TaskRun workflow's steps, each with its timeout and retries.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { PlaybookActivities } from '../activities/ansible/playbook.js';
import type { CloudActivities } from '../activities/cloud/instances.js';
import type { DhcpActivities } from '../activities/dhcp/leases.js';
import type { BareMetalHostActivities } from '../activities/kubernetes/baremetalhosts.js';
import type { ProvisioningActivities } from '../activities/kubernetes/provisionings.js';
import type { BpaResourceActivities } from '../activities/kubernetes/bpa-resources.js';
import type { PackageActivities } from '../activities/ssh/packages.js';
import type { InstallerKeyActivities } from '../activities/ssh/installer-key.js';
import type { CloudGcActivities } from '../activities/gc/cloud-vms.js';
import type { LeftoversGcActivities } from '../activities/gc/taskrun-leftovers.js';
import type { DeliveryActivities } from '../activities/delivery.js';
import type { EventActivities } from '../activities/kubernetes/events.js';
import type { HostConfigActivities } from '../activities/kubernetes/host-config.js';
import type { MachineActivities } from '../activities/kubernetes/machines.js';
import type { NodeActivities } from '../activities/kubernetes/nodes.js';
import type { BootstrapActivities } from '../activities/ssh/bootstrap.js';
import type { MachineConfigPoolActivities } from '../activities/kubernetes/machine-config-pools.js';
import type { OsImageActivities } from '../activities/ssh/os-image.js';
import type { ImageLabelActivities } from '../activities/registry/image-labels.js';
import type { KubernetesActivities } from '../activities/kubernetes/taskruns.js';
import type { SshActivities } from '../activities/ssh/build-users.js';
import type { TemporalActivities } from '../activities/temporal/workflows.js';

// Kubernetes calls are short, so they run as local activities: in the worker, within the
// workflow task, without a round trip through the server per call. A few quick retries absorb
// a blip; a longer outage is waited out by the workflow on timers, saying so (retry.ts).
export const kube = proxyLocalActivities<KubernetesActivities & HostConfigActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 5,
  },
});

/** Events are for people: a few tries, then the flow goes on without them. */
export const events = proxyLocalActivities<EventActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumAttempts: 3 },
});

/** Looking at other workflows from the worker (visibility, descriptions, signals). */
export const temporal = proxyActivities<TemporalActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export const allocator = proxyActivities<TemporalActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
});

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

/**
 * Cloud calls: throttling and 5xx retry with back-off; a bad config fails at once. Each is one
 * short API call, so a call lost with its worker is retried after 30 seconds.
 */
export const cloud = proxyActivities<CloudActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 8,
  },
});

/** Checking on a booting VM: a few quick tries; the boot wait tries again on its own timer. */
export const cloudCheck = proxyActivities<CloudActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

/** Terminating a VM retries until the cloud confirms it: a VM is never left behind. */
export const durableTerminate = proxyActivities<CloudActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '2 minutes' },
});

/** Orphan collection lists and terminates VMs one by one: it may take a while. */
export const cloudGc = proxyActivities<CloudActivities & CloudGcActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

/** Collecting TaskRun leftovers visits every static host over SSH: long, heartbeating. */
export const leftoversGc = proxyActivities<LeftoversGcActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

/** A Provisioning's Kubernetes calls: its resource, its hosts, what it leaves next to them. */
export const provisioningKube = proxyLocalActivities<
  ProvisioningActivities & BareMetalHostActivities
>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 10,
  },
});

/** Handing out a cluster's installer key: a host that is still booting is tried for a while. */
export const installerKey = proxyActivities<InstallerKeyActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 6 },
});

/** A kubespray run takes as long as it takes; a lost worker is noticed by its heartbeat. */
export const kubespray = proxyActivities<PlaybookActivities>({
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumAttempts: 5 },
});

/**
 * kubespray for runs since plans (provisioning.ts): the run heartbeats every 5 seconds, so a
 * worker lost mid-playbook is noticed in 30 seconds and the run resumes on another.
 */
export const playbooks = proxyActivities<PlaybookActivities>({
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumAttempts: 5 },
});

/** Whether the worker can run a Provisioning's kubespray release: a file read and `--version`. */
export const kubesprayCheck = proxyActivities<Pick<PlaybookActivities, 'checkKubespray'>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 5 },
});

export const dhcp = proxyLocalActivities<DhcpActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** A Software's and a BPA Cluster's Kubernetes calls: status, Events, finalizer, members. */
export const bpaKube = proxyLocalActivities<BpaResourceActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 10,
  },
});

/**
 * Installing a node's packages takes as long as the package manager does; it heartbeats every
 * 10 seconds, so a lost worker is noticed in a minute. A host that is not reachable is tried a
 * few times; a package that cannot be installed fails at once.
 */
export const packages = proxyActivities<PackageActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
});

/** A Machine's Kubernetes calls: its resource, its infrastructure object, its Node. */
export const machineKube = proxyLocalActivities<
  MachineActivities & NodeActivities & HostConfigActivities
>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 5,
  },
});

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

/** A rollout's Kubernetes calls: its pool, the pool's Nodes, their annotations and Events. */
export const poolKube = proxyLocalActivities<MachineConfigPoolActivities & NodeActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 5,
  },
});

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
export const registry = proxyActivities<ImageLabelActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});
