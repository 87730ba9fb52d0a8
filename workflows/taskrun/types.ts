// What the TaskRun workflow's steps share.
import type { Host, TaskRunOutcome, TaskRunRef, TaskRunWorkflowInput } from '../../shared/types.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import type { Phase, TaskRunStatus } from '../../shared/messages.js';

/** A static-pool TaskRun's allocation: plain data, rebuilt by replay. */
export interface PoolRun {
  attempt: number;
  /** The request that holds (or waits for) a slot. */
  requestId?: string;
  grant?: Host;
  exhausted?: string;
  /** The host serving the build, once provisioned. */
  serving?: Host;
  /** Hosts where a build user may exist: everything provisioning touched. */
  touched: Host[];
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
