// Every signal, update and query the engine's workflows take, grouped by the workflow that
// receives them: the one place the bridge, activities and workflows find a message's shape.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { MachineConfigPoolSpec } from './mco-api.js';
import type { OsImageSource } from './os-image.js';
import type { BpaClusterSpec, ProvisioningSpec, SoftwareSpec } from './bpa-api.js';
import type { Host } from './types.js';
import type { MachineSpec } from './machine-api.js';

// ── TaskRun workflow (`taskrun/<ns>/<name>/<uid>`) ─────────────────────────────────────────

/** What the bridge last saw of the TaskRun. Only ever moves forward: active → completed → deleted. */
export type TaskRunState = 'active' | 'completed' | 'deleted';

export const TASKRUN_STATE_ORDER: readonly TaskRunState[] = ['active', 'completed', 'deleted'];

export interface TaskRunObservation {
  state: TaskRunState;
}

export const taskRunObserved = defineSignal<[TaskRunObservation]>('taskRunObserved');

export type Phase =
  'Allocating' | 'Waiting' | 'Provisioning' | 'Ready' | 'Failed' | 'CleaningUp' | 'Done';

export interface TaskRunStatus {
  phase: Phase;
  observed: TaskRunState;
  /** The serving host's name (`localhost` for local platforms). */
  host?: string;
  user?: string;
  failedHosts: string[];
  error?: string;
}

export const taskRunStatus = defineQuery<TaskRunStatus>('status');

/** What `hostflow retry taskrun` hears back: the error it clears, and that serving starts again. */
export interface TaskRunRetryOutcome {
  /** The error the build had been answered with (its Secret is deleted). */
  previousError: string;
  /** Retries of this TaskRun so far, this one included. */
  retry: number;
}

/**
 * Serve a Failed TaskRun that still runs again, once its cause is fixed: its error Secret is
 * deleted and provisioning starts over. Validated: refused unless the TaskRun is Failed and running.
 */
export const retryTaskRun = defineUpdate<TaskRunRetryOutcome, []>('retryTaskRun');

/** Allocator → TaskRun workflow, for a request that had to wait. */
export const slotGranted = defineSignal<[{ requestId: string; host: Host }]>('slotGranted');
export const slotExhausted = defineSignal<[{ requestId: string; reason: string }]>('slotExhausted');
/** Allocator → waiting TaskRun workflows: it was lost and rebuilt itself, so ask again. */
export const askForSlotAgain = defineSignal<[]>('askForSlotAgain');

// ── Allocator (`allocator/<platform>`) ─────────────────────────────────────────────────────

export interface SlotRequestInput {
  /**
   * Unique per attempt: `<taskrun workflow id>#<run id>.<attempt>` (before v2 without the run
   * id); a retried request never takes two slots.
   */
  requestId: string;
  /** The TaskRun workflow to signal when a queued request is granted. */
  workflowId: string;
  /** Hosts this TaskRun failed on (or cannot use): never granted to it. */
  excluded: string[];
  /**
   * A host an earlier run of this TaskRun workflow served the build on, which still runs there:
   * the slot is taken over (even past capacity, since the build is real), not granted anew.
   */
  adopt?: string;
  /** A Cluster API Machine's request: only a host with `serves: machines` takes it. */
  serves?: 'machines';
}

export type RequestOutcome =
  | { status: 'granted'; host: Host }
  /** 1 is next in line. */
  | { status: 'queued'; position: number }
  | { status: 'exhausted'; reason: string };

/** Answered synchronously: granted now, queued (granted later by signal), or exhausted. */
export const requestSlot = defineUpdate<RequestOutcome, [SlotRequestInput]>('requestSlot');

/** Frees a slot (or drops a queued request). Sent after the build user is removed. */
export const releaseSlot = defineSignal<[{ requestId: string }]>('releaseSlot');

/** Provisioning on a host succeeded or failed: feeds the host's health across TaskRuns. */
export const hostOutcome = defineSignal<[{ host: string; ok: boolean }]>('hostOutcome');

/** host-config changed: reload hosts now. */
export const hostConfigChanged = defineSignal<[]>('hostConfigChanged');

export const allocatorState = defineQuery<unknown>('allocatorState');

/** `hostflow host drain|undrain`: take a static host out of rotation, or put it back. */
export interface HostDrainInput {
  host: string;
  drained: boolean;
}

/** The host as it is once the update applied. */
export interface HostDrainOutcome {
  platform: string;
  host: string;
  drained: boolean;
  /** False when the host already was in that state. */
  changed: boolean;
  /** Why the engine drained it itself (a Machine ran there as root), while it stays drained. */
  drainedBecause?: string;
  /** Builds still running on it (they finish; nothing new starts while drained). */
  inUse: number;
  capacity: number;
  /** Waiters of the platform after the change (an undrain serves those it can at once). */
  waiting: number;
}

/** Validated: an unknown host, or a platform whose hosts are cloud VMs, is rejected. */
export const setHostDrained = defineUpdate<HostDrainOutcome, [HostDrainInput]>('setHostDrained');

// ── host-config (`hostconfig/<engine namespace>`) ──────────────────────────────────────────

export const hostConfigObserved = defineSignal<[{ resourceVersion: string }]>('hostConfigObserved');

// ── Cloud GC (`cloud-gc/<engine namespace>`) ───────────────────────────────────────────────

/** Sent by each worker as it starts: collect now rather than at the next interval. */
export const collectNow = defineSignal('collectNow');

// ── Provisioning workflow (`provisioning/<ns>/<name>`) ─────────────────────────────────────

/** What the bridge saw of a Provisioning: its spec at a generation, or that it is going away. */
export interface ProvisioningObservation {
  uid: string;
  generation: number;
  /** Its `cluster` label. */
  cluster?: string;
  spec: ProvisioningSpec;
  /** Where node IPs come from: the hosts' NIC status, or the DHCP server's leases. */
  ipSource: 'nic' | 'dhcp';
  /** Its deletionTimestamp is set (or it is gone): reset, release, and let it go. */
  deleting: boolean;
  /** Its retry annotation: a new value resumes a failed run (RETRY_ANNOTATION). */
  retry?: string;
}

export const provisioningObserved = defineSignal<[ProvisioningObservation]>('provisioningObserved');

// ── Software workflow (`software/<ns>/<name>`) ─────────────────────────────────────────────

/** A node of a cluster as its Provisioning's status reports it. */
export interface ClusterNode {
  label: string;
  roles: string[];
  ip: string;
  /** The user the installer key logs in as (root, or a sudoer). */
  user: string;
}

/** What the bridge knows of the cluster a Software names: its Provisioning's phase and nodes. */
export interface ClusterView {
  provisioning: string;
  phase: string;
  nodes: ClusterNode[];
}

/** What the bridge saw of a Software, with the cluster it installs on as it is now. */
export interface SoftwareObservation {
  uid: string;
  generation: number;
  /** Its `cluster` label. */
  cluster?: string;
  spec: SoftwareSpec;
  deleting: boolean;
  /** Its retry annotation: a new value installs again on the nodes that failed. */
  retry?: string;
  /** No Provisioning builds its cluster (in its namespace): absent. */
  clusterView?: ClusterView;
}

export const softwareObserved = defineSignal<[SoftwareObservation]>('softwareObserved');

// ── BPA Cluster workflow (`bpa-cluster/<ns>/<name>`) ───────────────────────────────────────

/** A member resource a Cluster names, as the bridge last saw it; absent while it does not exist. */
export interface ClusterMember<Observation> {
  phase?: string;
  /** What its own workflow is sent: the Cluster starts that workflow if need be and passes it on. */
  observation: Observation;
}

export interface BpaClusterObservation {
  uid: string;
  generation: number;
  spec: BpaClusterSpec;
  deleting: boolean;
  provisioning?: ClusterMember<ProvisioningObservation>;
  software?: ClusterMember<SoftwareObservation>;
}

export const bpaClusterObserved = defineSignal<[BpaClusterObservation]>('bpaClusterObserved');

// ── Machine workflow (`machine/<ns>/<name>`) ───────────────────────────────────────────────

/** A Machine as the bridge saw it: what the workflow acts on, never the bootstrap data. */
export interface MachineObservation {
  uid: string;
  generation: number;
  spec: MachineSpec;
  /** Its deletionTimestamp is set (or it is gone): run the deletion steps, then let it go. */
  deleting: boolean;
  /** `cluster.x-k8s.io/paused` is set: no progress until it is removed. */
  paused: boolean;
  /** The pre-drain and pre-terminate hook annotations present, by full name. */
  preDrainHooks: string[];
  preTerminateHooks: string[];
  excludeDraining: boolean;
  excludeVolumeWait: boolean;
}

export const machineObserved = defineSignal<[MachineObservation]>('machineObserved');

// ── Rollout workflow (`rollout/<pool>`) ────────────────────────────────────────────────────

/** A MachineConfigPool as the bridge sees it, with the image its MachineConfigs render to. */
export interface PoolObservation {
  uid: string;
  generation: number;
  spec: MachineConfigPoolSpec;
  /** The effective image and where it comes from; none when no base image is configured. */
  target?: OsImageSource;
  /** hostflow's settings for the pool, from its annotations (see deploy/examples/rollout.yaml). */
  settings: RolloutSettings;
  deleted: boolean;
}

export interface RolloutSettings {
  /** SSH login to the nodes: user and the key's Secret in the engine namespace. */
  sshUser: string;
  sshSecret: string;
  drainTimeout?: string;
  bootTimeout?: string;
}

export const poolObserved = defineSignal<[PoolObservation]>('poolObserved');
