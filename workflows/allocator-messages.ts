// How TaskRun workflows talk to their platform's allocator, and how it answers.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RequestOutcome, SlotHost } from './allocation.js';

export interface SlotRequestInput {
  /** Unique per attempt: `<taskrun workflow id>#<attempt>`; a retried request never takes two slots. */
  requestId: string;
  /** The TaskRun workflow to signal when a queued request is granted. */
  workflowId: string;
  /** This TaskRun's failed hosts. */
  excluded: string[];
}

/** Answered synchronously: granted now, queued (granted later by signal), or exhausted. */
export const requestSlot = defineUpdate<RequestOutcome, [SlotRequestInput]>('requestSlot');

/** Frees a slot (or drops a queued request). Sent after the build user is removed. */
export const releaseSlot = defineSignal<[{ requestId: string }]>('releaseSlot');

/** Provisioning on a host succeeded or failed: feeds the host's health across TaskRuns. */
export const hostOutcome = defineSignal<[{ host: string; ok: boolean }]>('hostOutcome');

/** host-config changed: reload hosts now. */
export const hostConfigChanged = defineSignal<[]>('hostConfigChanged');

/** Allocator → TaskRun workflow, for a request that had to wait. */
export const slotGranted = defineSignal<[{ requestId: string; host: SlotHost }]>('slotGranted');
export const slotExhausted = defineSignal<[{ requestId: string; reason: string }]>('slotExhausted');

export const allocatorState = defineQuery<unknown>('allocatorState');

export interface AllocatorInput {
  platform: string;
  /** Carried across continue-as-new (plain JSON). */
  state?: unknown;
  /** A dynamic pool's VMs, carried across continue-as-new. */
  pool?: unknown;
}
