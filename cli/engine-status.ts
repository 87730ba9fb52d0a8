// What `hostflow status` finds: printed as JSON (`-o json`) or by status-text.ts. Its own file
// so that status.ts, which finds it, and status-text.ts, which shows it, both import it downward.
import type { AllocationSummary } from '../shared/contracts/allocator.js';
import type { PlatformKind } from './platforms.js';

export interface PlatformStatus {
  platform: string;
  kind: PlatformKind | 'unknown';
  /** The allocator workflow, or null for local platforms and platforms not asked for yet. */
  allocator: string | null;
  capacity: number | null;
  inUse: number | null;
  queue: Array<{ taskRun: string | null; requestId: string }>;
  hosts: Array<AllocationSummary['hosts'][number] & { nextProbeAt?: string }>;
  /** Dynamic: the VM of each TaskRun served; pool: the pool's VMs. Null where VMs do not apply. */
  vms: Array<{ id: string; phase?: string; inUse?: number; taskRun?: string }> | null;
  /** Why this platform's state is missing or partial. */
  problem?: string;
}

export interface EngineStatus {
  temporalNamespace: string;
  taskQueue: string;
  engineNamespace: string;
  platforms: PlatformStatus[];
  hostConfigProblems: string[];
  /** What could not be looked at (host-config, an allocator): the exit code is 1. */
  problems: string[];
}
