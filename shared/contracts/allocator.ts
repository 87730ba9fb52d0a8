// The allocator's contract (`allocator/<platform>`): its input, the slot protocol every requester
// speaks (request, grant or queue, release), host drains and host outcomes, and how it is started.
// Imported by activities and the CLI as well as the workflows, so it imports nothing of theirs.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Host } from '../../platform-config/host.js';
import { KIND, SA } from '../search-attributes.js';
import { ALLOCATOR_PRIORITY } from '../task-queue.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import type { WorkflowStart } from '../workflow-start.js';

export interface AllocatorInput {
  platform: string;
  /** Carried across continue-as-new (plain JSON). */
  state?: unknown;
  /** A dynamic pool's VMs, carried across continue-as-new. */
  pool?: unknown;
  /** How often holders whose run ended are looked for (the engine's resync period). */
  sweepSeconds?: number;
  /** Epoch ms of the last such sweep, carried across continue-as-new. */
  lastSweep?: number;
}

export type AllocatorWorkflow = (input: AllocatorInput) => Promise<void>;

/**
 * Who holds the allocator's slots and who waits, as each run keeps it in its memo (under
 * SLOTS_MEMO) before any answer goes out: what a run that starts after a lost one begins from.
 */
export interface SlotsSnapshot {
  /** Host name → request ids holding one of its slots. */
  holders: Record<string, string[]>;
  /** Request ids waiting in line. */
  waiting: string[];
}

export const SLOTS_MEMO = 'slots';

/** A snapshot read back from a memo, or undefined when it is not one (a run before v4). */
export function asSlotsSnapshot(value: unknown): SlotsSnapshot | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { holders, waiting } = value as Record<string, unknown>;
  const strings = (list: unknown): list is string[] =>
    Array.isArray(list) && list.every((item) => typeof item === 'string');
  if (typeof holders !== 'object' || holders === null || !strings(waiting)) return undefined;
  if (!Object.values(holders).every(strings)) return undefined;
  return { holders: holders as Record<string, string[]>, waiting };
}

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

/** Allocator → requesting workflow, for a request that had to wait. */
export const slotGranted = defineSignal<[{ requestId: string; host: Host }]>('slotGranted');
export const slotExhausted = defineSignal<[{ requestId: string; reason: string }]>('slotExhausted');
/** Allocator → waiting workflows: it was lost and rebuilt itself, so ask again. */
export const askForSlotAgain = defineSignal<[]>('askForSlotAgain');

/** Provisioning on a host succeeded or failed: feeds the host's health across TaskRuns. */
export const hostOutcome = defineSignal<[{ host: string; ok: boolean }]>('hostOutcome');

/** host-config changed: reload hosts now. */
export const hostConfigChanged = defineSignal<[]>('hostConfigChanged');

/** What the allocator shows operators (query, UI details, metrics). */
export interface AllocationSummary {
  hosts: Array<{
    name: string;
    inUse: number;
    capacity: number;
    removed: boolean;
    health: 'healthy' | 'unhealthy' | 'probing';
    consecutiveFailures: number;
    /** For an unhealthy host: when its next probe is due. */
    probeInMs?: number;
    /** Taken out of rotation by an operator: its builds finish, it gets no new ones. */
    drained: boolean;
    /** Why the engine drained it itself, if it did. */
    drainedBecause?: string;
    /** A host for Cluster API Machines only (host.<name>.serves). */
    servesMachines?: boolean;
  }>;
  /** Waiting request ids, next first. */
  queue: string[];
  inUse: number;
  /** Slots of configured (not removed) hosts, healthy or not. */
  capacity: number;
  /** Every drained host, configured or not (a drain outlasts the host leaving the config). */
  drained: string[];
}

export const allocatorState = defineQuery<AllocationSummary>('allocatorState');

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

/**
 * The platform's allocator, started by the first request for a slot (update-with-start, which
 * finds the running one by its id).
 * Its tasks go ahead of the TaskRuns' (ALLOCATOR_PRIORITY): every TaskRun of the platform waits
 * on it.
 */
export function allocatorStart(
  platform: string,
  sweepSeconds?: number,
): WorkflowStart<AllocatorWorkflow> {
  return {
    workflowType: 'allocatorWorkflow',
    workflowId: WORKFLOW_ID.allocator(platform),
    args: [{ platform, ...(sweepSeconds ? { sweepSeconds } : {}) }],
    priority: ALLOCATOR_PRIORITY,
    typedSearchAttributes: [
      { key: SA.kind, value: KIND.allocator },
      { key: SA.platform, value: platform },
    ],
    staticSummary: `Allocator for ${platform}`,
    staticDetails:
      `Owns the host slots of platform \`${platform}\`: serves TaskRuns first come, first served, ` +
      'never over capacity, and takes hosts that keep failing out of rotation until a probe succeeds.',
  };
}
