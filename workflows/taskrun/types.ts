// What the TaskRun workflow's steps share.
import type { CloudPlatform } from '../../platform-config/host-config.js';
import type { Host } from '../../platform-config/host.js';
import type {
  Phase,
  TaskRunStatus,
  TaskRunRef,
  TaskRunWorkflowInput,
} from '../../shared/contracts/taskrun.js';
import type { SlotMail } from '../kit/allocator-slot.js';

/**
 * A TaskRun's hold on its platform's allocator and the hosts it touched: plain data. Its slot
 * mail (grant, exhausted, askAgain) is about `requestId`.
 */
export interface PoolRun extends SlotMail {
  attempt: number;
  /** The request that holds (or waits for) a slot. */
  requestId?: string;
  /** The host serving the build, once provisioned. */
  serving?: Host;
  /** Hosts where a build user may exist: everything provisioning touched. */
  touched: Host[];
  /** Hosts whose host-config entry cannot serve (say, a missing admin key): not tried again. */
  skipped?: string[];
  lastError?: string;
  /** Cloud VMs launched for this TaskRun (dynamic platforms); each is terminated at clean-up. */
  vms?: string[];
  /** Deliveries its namespace refused for a reason that may clear, so far (deliver.ts). */
  forbiddenTries?: number;
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
  /** No Secret can ever be written for this TaskRun (its name is too long): nothing to clean. */
  unanswerable?: boolean;
  /** Answered and waiting for the TaskRun to end: the one moment a retry can be taken. */
  answered?: boolean;
  /** Retries asked for by hand (`hostflow retry taskrun`); `pending` until serving starts again. */
  retries?: { count: number; pending: boolean };
  /** Set once this run continues as new (continue.ts): no clean-up then. */
  continuing?: boolean;
}
