// A dynamic pool's VMs, as the allocator of a `dynamic-pool-platforms` platform keeps them
// (docs/architecture.md, "Dynamic pools"). Pure and deterministic like allocation.ts: the workflow
// passes the clock in, and the state is plain JSON carried across continue-as-new.
//
// A VM's life: launching → booting → ready (its slots are allocator hosts) → retiring (past
// max-age: no new work) → terminating (no holders left) → gone. Launches happen only for waiters
// that no ready, booting or launching VM will serve, and never beyond max-instances.
import { claimById } from '../../platform-config/contract.js';
import type { Host } from '../../platform-config/host.js';
import type { AllocationState } from './allocation.js';

export type PoolVmPhase = 'launching' | 'booting' | 'ready' | 'retiring' | 'terminating';

export interface PoolVm {
  /** The launch's idempotency key, claimed before launching; `adopted:<id>` for rebuilt VMs. */
  key: string;
  id?: string;
  phase: PoolVmPhase;
  /** Epoch ms; the cloud's launch time once known (max-age counts from it). */
  launchedAt: number;
  /** Epoch ms by which a booting VM must answer SSH (allocation-timeout). */
  bootDeadline: number;
  /** Epoch ms of the next readiness check of a booting VM. */
  nextCheck: number;
  address?: string;
}

export interface PoolState {
  /** Unique per pool state: launch keys of a rebuilt allocator never repeat earlier ones. */
  epoch: string;
  serial: number;
  vms: PoolVm[];
  /** Launches or boots that failed in a row; enough of them turn waiters away. */
  failures: number;
  /**
   * VMs retired in a row because no build could be provisioned on them (their health circuit
   * opened) with no build served meanwhile: every VM failing the same way (say, an ssh-secret the
   * image does not accept) must end in an answer for the builds, not in endless replacements.
   */
  unservable?: number;
  lastError?: string;
}

export interface PoolSpec {
  platform: string;
  concurrency: number;
  maxInstances: number;
  maxAgeMs: number;
  bootTimeoutMs: number;
  checkIntervalMs: number;
  /** The provider's admin user, the ssh-secret and sudo-commands of every VM. */
  user: string;
  secret: string;
  sudoCommands: string[];
}

/** Failed launches/boots in a row after which queued TaskRuns get an error instead of waiting on. */
export const POOL_FAILURES_TO_EXHAUST = 3;

export function emptyPool(epoch: string): PoolState {
  return { epoch, serial: 0, vms: [], failures: 0 };
}

/** Ready VMs young enough for new work: the allocator's hosts. */
export function poolHosts(pool: PoolState, spec: PoolSpec): Host[] {
  return pool.vms
    .filter((vm) => vm.phase === 'ready' && vm.id && vm.address)
    .map((vm) => ({
      name: vm.id!,
      address: vm.address!,
      user: spec.user,
      secret: spec.secret,
      concurrency: spec.concurrency,
      sudoCommands: [...spec.sudoCommands],
    }));
}

/**
 * VMs past max-age stop taking work, and so do VMs whose health circuit opened (provisioning
 * kept failing there): a fresh VM is cheaper than probing a broken one. Retiring VMs nobody
 * holds are to be terminated. With no spec (the platform left the config) every VM retires.
 * Call `applyHosts` with `poolHosts` after.
 */
export function retire(
  pool: PoolState,
  alloc: Readonly<AllocationState>,
  spec: PoolSpec | undefined,
  now: number,
): PoolVm[] {
  const unservable: PoolVm[] = [];
  for (const vm of pool.vms) {
    const unhealthy = vm.id !== undefined && alloc.health[vm.id]?.openUntil !== undefined;
    if (vm.phase === 'ready' && (!spec || unhealthy || now - vm.launchedAt >= spec.maxAgeMs)) {
      vm.phase = 'retiring';
      if (spec && unhealthy) unservable.push(vm);
    }
    if (vm.phase === 'retiring' && !(alloc.holders[vm.id ?? '']?.length ?? 0)) {
      vm.phase = 'terminating';
    }
  }
  return unservable;
}

/**
 * A VM was retired because no build could be provisioned on it: returns the reason to turn
 * waiters away with once that has happened to enough VMs in a row.
 */
export function recordUnservable(pool: PoolState, vmId: string): string | undefined {
  pool.unservable = (pool.unservable ?? 0) + 1;
  if (pool.unservable < POOL_FAILURES_TO_EXHAUST) return undefined;
  pool.unservable = 0;
  return (
    `${POOL_FAILURES_TO_EXHAUST} VMs in a row could not take a build (provisioning failed ` +
    `repeatedly on each, the last VM ${vmId}); check the platform's ssh-secret and image`
  );
}

/** A build was provisioned on one of the pool's VMs: the pool's VMs can serve. */
export function recordServed(pool: PoolState): void {
  pool.unservable = 0;
}

/**
 * Launches needed now: waiters are placed, in order, on free slots of ready VMs they have not
 * failed on, then on slots of VMs still coming up; the rest need new VMs, within max-instances.
 */
export function launchesNeeded(
  pool: PoolState,
  alloc: Readonly<AllocationState>,
  spec: PoolSpec,
): number {
  const free = new Map<string, number>();
  for (const vm of pool.vms) {
    // Ready VMs are exactly the allocator's hosts (poolHosts), each with the pool's concurrency.
    if (vm.phase !== 'ready' || !vm.id || !vm.address) continue;
    if (alloc.health[vm.id]?.openUntil !== undefined) continue;
    free.set(vm.id, spec.concurrency - (alloc.holders[vm.id]?.length ?? 0));
  }
  let coming =
    pool.vms.filter((vm) => vm.phase === 'launching' || vm.phase === 'booting').length *
    spec.concurrency;
  let unplaced = 0;
  for (const waiter of alloc.queue) {
    const slot = [...free].find(([id, n]) => n > 0 && !waiter.excluded.includes(id));
    if (slot) free.set(slot[0], slot[1] - 1);
    else if (coming > 0) coming--;
    else unplaced++;
  }
  const needed = Math.ceil(unplaced / spec.concurrency);
  return Math.max(0, Math.min(needed, spec.maxInstances - pool.vms.length));
}

/** Records `count` new launches, each with its own idempotency key. */
export function addLaunches(pool: PoolState, spec: PoolSpec, count: number, now: number): PoolVm[] {
  const added: PoolVm[] = [];
  for (let i = 0; i < count; i++) {
    const vm: PoolVm = {
      key: `pool/${spec.platform}/${pool.epoch}/${++pool.serial}`,
      phase: 'launching',
      launchedAt: now,
      bootDeadline: now + spec.bootTimeoutMs,
      nextCheck: now,
    };
    pool.vms.push(vm);
    added.push(vm);
  }
  return added;
}

/** A VM found in the cloud with this pool's owner tag that the pool does not know yet. */
export function adopt(
  pool: PoolState,
  spec: PoolSpec,
  vm: { id: string; launchedAt?: string },
  now: number,
): void {
  if (pool.vms.some((known) => known.id === vm.id)) return;
  const launched = vm.launchedAt ? Date.parse(vm.launchedAt) : NaN;
  pool.vms.push({
    key: claimById(vm.id),
    id: vm.id,
    phase: 'booting',
    launchedAt: Number.isFinite(launched) ? launched : now,
    bootDeadline: now + spec.bootTimeoutMs,
    nextCheck: now,
  });
}

/** A launch or boot failed: returns the reason to turn waiters away with once failures pile up. */
export function recordPoolFailure(pool: PoolState, reason: string): string | undefined {
  pool.failures++;
  pool.lastError = reason;
  if (pool.failures < POOL_FAILURES_TO_EXHAUST) return undefined;
  pool.failures = 0;
  return `${POOL_FAILURES_TO_EXHAUST} VMs in a row failed to start; the last: ${reason}`;
}

/** Epoch ms when the pool next needs attention (a boot check or a VM reaching max-age). */
export function poolWakeUp(pool: PoolState, spec: PoolSpec | undefined): number | undefined {
  const times = pool.vms.flatMap((vm) =>
    vm.phase === 'booting'
      ? [vm.nextCheck]
      : vm.phase === 'ready' && spec
        ? [vm.launchedAt + spec.maxAgeMs]
        : [],
  );
  return times.length > 0 ? Math.min(...times) : undefined;
}

/** What the pool shows operators, e.g. `i-1 ready (2/2), i-2 booting`. */
export function describePool(pool: PoolState, alloc: Readonly<AllocationState>): string {
  return pool.vms
    .map((vm) => {
      const held = vm.id ? (alloc.holders[vm.id]?.length ?? 0) : 0;
      return `${vm.id ?? vm.key} ${vm.phase}${vm.phase === 'ready' || vm.phase === 'retiring' ? ` (${held} in use)` : ''}`;
    })
    .join(', ');
}

/** Launch keys and adopted ids this pool claims: garbage collection spares those VMs. */
export function poolClaims(pool: PoolState): string[] {
  return pool.vms.map((vm) => vm.key);
}
