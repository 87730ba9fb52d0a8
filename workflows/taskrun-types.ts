// What the TaskRun workflow's steps share.
import type { TaskRunRef } from '../activities/kubernetes.js';
import type { CloudPlatform } from '../platform-config/host-config.js';
import type { SlotHost } from './allocation.js';
import type { Phase, TaskRunStatus } from './messages.js';

export interface TaskRunWorkflowInput extends TaskRunRef {
  platform: string;
}

export type TaskRunOutcome =
  | { served: 'local' }
  | { served: 'static'; host: string; user: string }
  | { served: 'dynamic'; instance: string; user: string }
  | { served: 'error'; message: string }
  | { served: 'nothing'; reason: string };

/** A static-pool TaskRun's allocation: plain data, rebuilt by replay. */
export interface PoolRun {
  attempt: number;
  /** The request that holds (or waits for) a slot. */
  requestId?: string;
  grant?: SlotHost;
  exhausted?: string;
  /** The host serving the build, once provisioned. */
  serving?: SlotHost;
  /** Hosts where a build user may exist: everything provisioning touched. */
  touched: SlotHost[];
  lastError?: string;
  /** Cloud VMs launched for this TaskRun (dynamic platforms); each is terminated at clean-up. */
  vms?: string[];
}

export interface TaskRun {
  input: TaskRunWorkflowInput;
  ref: TaskRunRef;
  status: TaskRunStatus;
  ended(): boolean;
  publish(phase: Phase): void;
  pool: PoolRun;
  /** The dynamic platform serving this TaskRun, once resolved. */
  cloud?: CloudPlatform;
}

/** Ends serving with an error Secret the build can print (see taskrun.ts). */
export type Fail = (
  run: TaskRun,
  message: string,
  labels: Record<string, string | null>,
) => Promise<TaskRunOutcome>;
