// The static-pool allocation state machine: the core of the `allocator/<platform>` workflow
// (docs/architecture.md, "Static pools"; the multi-platform-controller's "Host Pool"). Pure and deterministic: no I/O, no clock, no
// randomness of its own (the workflow passes them in), so it replays identically. Its state is
// plain JSON because the allocator carries it across continue-as-new.
//
// Guarantees: a host never gets more holders than its concurrency at grant time, a request id
// holds at most one slot, waiters are served first come first served, and every waiter is either
// servable eventually or told it is exhausted.
import type { Host } from '../../platform-config/host.js';
import type { AllocationSummary, RequestOutcome } from '../../shared/contracts/allocator.js';
import { rebuiltHolder, runIdOfRequest, workflowIdOfRequest } from '../../shared/slot-requests.js';

export interface SlotRequest {
  requestId: string;
  /** This TaskRun's failed hosts: never granted to it again. */
  excluded: string[];
  /** Epoch ms, for showing how long a waiter has waited. */
  requestedAt: number;
  /** A host whose slot a build of an earlier run already uses (see SlotRequestInput.adopt). */
  adopt?: string;
  /** A Cluster API Machine's request: only hosts that serve machines take it. */
  serves?: 'machines';
}

export interface HostHealth {
  consecutiveFailures: number;
  /** Set while the circuit is open: the host takes no new work, and is probed from this time on. */
  openUntil?: number;
  backoffMs?: number;
  /** A probe is running; its result decides whether the circuit closes. */
  probing?: boolean;
}

/** A configured host; `removed` once it left the config but still has holders. */
export type AllocatedHost = Host & { removed?: boolean };

export interface AllocationState {
  hosts: Record<string, AllocatedHost>;
  /** Host name → request ids holding one of its slots (hosts without holders have no entry). */
  holders: Record<string, string[]>;
  /** Waiters, first come first served. */
  queue: SlotRequest[];
  /** Hosts with recent failures only; a healthy host has no entry. */
  health: Record<string, HostHealth>;
  /** Capacity can grow (a dynamic pool launches VMs): waiters queue instead of being exhausted. */
  elastic?: boolean;
  /**
   * Hosts an operator took out of rotation (`hostflow host drain`), sorted: they take no new
   * work until undrained. Kept apart from `hosts`, which every config read rewrites, and kept
   * while a host leaves the config, so a drain outlasts a config edit.
   */
  drained?: string[];
  /** Why the engine drained a host itself (a Machine ran there as root); an undrain clears it. */
  drainedBecause?: Record<string, string>;
}

export interface QueueService {
  grants: Array<{ requestId: string; host: Host }>;
  /** Waiters that no configured host can serve any more; they have left the queue. */
  exhausted: Array<{ requestId: string; reason: string }>;
}

/** Circuit breaker settings: the one place they are defined. */
export const HEALTH = {
  failuresToOpen: 3,
  firstBackoffMs: 60_000,
  maxBackoffMs: 30 * 60_000,
} as const;

export function emptyState(): AllocationState {
  return { hosts: {}, holders: {}, queue: [], health: {} };
}

/**
 * Applies the live config. New and changed hosts take effect at once (a lowered concurrency
 * revokes no slot; it only stops grants until holders drop below it). Hosts no longer configured
 * take no new work and are dropped when their last holder releases. Call `serveQueue` afterwards.
 */
export function applyHosts(state: AllocationState, hosts: Host[]): void {
  const configured = hosts.map((host) => host.name);
  for (const { name, address, user, secret, concurrency, sudoCommands, serves } of hosts) {
    // Copy field by field: callers may pass richer objects, and the state must stay plain.
    state.hosts[name] = {
      name,
      address,
      user,
      secret,
      concurrency,
      sudoCommands: [...sudoCommands],
      ...(serves === 'machines' ? { serves } : {}),
    };
  }
  for (const name of Object.keys(state.hosts)) {
    if (configured.includes(name)) continue;
    state.hosts[name].removed = true;
    dropIfGone(state, name);
  }
}

/**
 * Grants a slot now, queues the request, or says no host can ever serve it. Idempotent by
 * request id: a retried request gets its existing slot or queue position. A newcomer is granted
 * at once only if no earlier waiter could take that slot, so it never overtakes the queue.
 * `_now` is accepted for call-site symmetry; eligibility depends on state alone (an open circuit
 * closes only through a probe or a success, never by the clock).
 *
 * A workflow id has one running run at a time: a request from a run drops whatever other runs
 * of its workflow still hold or wait for (an operator terminated them). A request that adopts a
 * host takes its slot even past capacity, since the build it stands for already runs there.
 */
export function request(
  state: AllocationState,
  req: SlotRequest,
  random: () => number,
  _now?: number,
): RequestOutcome {
  dropOtherRuns(state, req.requestId);
  const held = holdingHost(state, req.requestId);
  if (held !== undefined) return { status: 'granted', host: slotHost(state.hosts[held]) };
  const index = state.queue.findIndex((waiter) => waiter.requestId === req.requestId);
  if (index >= 0) return { status: 'queued', position: index + 1 };
  if (req.adopt !== undefined) {
    if (!state.hosts[req.adopt]) {
      return { status: 'exhausted', reason: `host ${req.adopt} is not configured any more` };
    }
    return { status: 'granted', host: grant(state, req.requestId, req.adopt) };
  }

  const reason = exhaustion(state, req);
  if (reason !== undefined) return { status: 'exhausted', reason };
  const choice = choose(state, req, random);
  if (choice !== undefined && !state.queue.some((w) => eligible(state, choice, w))) {
    return { status: 'granted', host: grant(state, req.requestId, choice) };
  }
  state.queue.push({
    requestId: req.requestId,
    excluded: [...req.excluded],
    requestedAt: req.requestedAt,
    ...(req.serves ? { serves: req.serves } : {}),
  });
  return { status: 'queued', position: state.queue.length };
}

/**
 * Frees the request's slot, or drops it from the queue. A slot rebuilt after the allocator was
 * lost (whose attempt is unknown) is freed by any request id of its run. Unknown ids are ignored.
 */
export function release(state: AllocationState, requestId: string): void {
  const workflowId = workflowIdOfRequest(requestId);
  const runId = runIdOfRequest(requestId);
  const holder = [requestId, rebuiltHolder(workflowId, runId), rebuiltHolder(workflowId)].find(
    (id) => holdingHost(state, id) !== undefined,
  );
  const host = holder === undefined ? undefined : holdingHost(state, holder);
  if (host !== undefined) {
    const remaining = state.holders[host].filter((id) => id !== holder);
    if (remaining.length > 0) state.holders[host] = remaining;
    else delete state.holders[host];
    if (state.hosts[host]?.serves === 'machines') {
      // Its bootstrap data ran as root: nothing the engine can check says what it left behind.
      setDrained(state, host, true);
      state.drainedBecause = {
        ...state.drainedBecause,
        [host]:
          `a Machine (${workflowId}) ran its bootstrap data there as root; ` +
          'reinstall or wipe the host, then undrain it',
      };
    }
    dropIfGone(state, host);
    return;
  }
  state.queue = state.queue.filter((waiter) => waiter.requestId !== requestId);
}

/**
 * Serves waiters in order. A waiter that cannot be placed now keeps its place without blocking
 * later waiters that can use other hosts (the slots they take are ones it could not use).
 * Waiters left with no configured host they have not failed on are returned as exhausted.
 */
export function serveQueue(
  state: AllocationState,
  random: () => number,
  _now?: number,
): QueueService {
  const service: QueueService = { grants: [], exhausted: [] };
  const waiting: SlotRequest[] = [];
  for (const waiter of state.queue) {
    const reason = exhaustion(state, waiter);
    const choice = reason === undefined ? choose(state, waiter, random) : undefined;
    if (reason !== undefined) service.exhausted.push({ requestId: waiter.requestId, reason });
    else if (choice !== undefined) {
      service.grants.push({
        requestId: waiter.requestId,
        host: grant(state, waiter.requestId, choice),
      });
    } else waiting.push(waiter);
  }
  state.queue = waiting;
  return service;
}

/** Provisioning failed on the host; enough failures in a row open its circuit. */
export function recordFailure(state: AllocationState, host: string, now: number): void {
  if (!state.hosts[host]) return;
  const health = state.health[host] ?? { consecutiveFailures: 0 };
  health.consecutiveFailures++;
  if (health.openUntil === undefined && health.consecutiveFailures >= HEALTH.failuresToOpen) {
    health.backoffMs = HEALTH.firstBackoffMs;
    health.openUntil = now + HEALTH.firstBackoffMs;
  }
  state.health[host] = health;
}

/** Provisioning worked: the host is healthy again, even if its circuit was open. Call `serveQueue`. */
export function recordSuccess(state: AllocationState, host: string): void {
  delete state.health[host];
}

/** Open circuits whose back-off has elapsed, now marked as probing: the caller probes each. */
export function hostsDueForProbe(state: AllocationState, now: number): string[] {
  const due = openCircuits(state).filter((name) => state.health[name].openUntil! <= now);
  for (const name of due) state.health[name].probing = true;
  return due;
}

/** A probe's result: closes the circuit, or reopens it with a doubled back-off. Call `serveQueue`. */
export function recordProbe(state: AllocationState, host: string, ok: boolean, now: number): void {
  const health = state.health[host];
  if (!health?.probing) return; // stale: a success closed the circuit meanwhile, or host dropped
  if (ok) {
    delete state.health[host];
    return;
  }
  delete health.probing;
  health.backoffMs = Math.min((health.backoffMs ?? HEALTH.firstBackoffMs) * 2, HEALTH.maxBackoffMs);
  health.openUntil = now + health.backoffMs;
}

/** Epoch ms when the earliest open circuit is due for a probe (never before `now`), if any. */
export function nextWakeUp(state: AllocationState, now: number): number | undefined {
  const times = openCircuits(state).map((name) => state.health[name].openUntil!);
  return times.length > 0 ? Math.max(now, Math.min(...times)) : undefined;
}

/** What the allocator shows operators (query, UI details, metrics). */
export function summary(state: AllocationState, now: number): AllocationSummary {
  const hosts = Object.keys(state.hosts)
    .sort()
    .map((name) => {
      const host = state.hosts[name];
      const health = state.health[name];
      const open = health?.openUntil !== undefined;
      return {
        name,
        inUse: holdersOf(state, name).length,
        capacity: host.concurrency,
        removed: host.removed === true,
        health: health?.probing ? 'probing' : open ? 'unhealthy' : 'healthy',
        consecutiveFailures: health?.consecutiveFailures ?? 0,
        ...(open && !health.probing ? { probeInMs: Math.max(0, health.openUntil! - now) } : {}),
        drained: isDrained(state, name),
        ...(state.drainedBecause?.[name] ? { drainedBecause: state.drainedBecause[name] } : {}),
        ...(host.serves === 'machines' ? { servesMachines: true } : {}),
      } as const;
    });
  return {
    hosts,
    queue: state.queue.map((waiter) => waiter.requestId),
    inUse: hosts.reduce((sum, host) => sum + host.inUse, 0),
    capacity: hosts.filter((h) => !h.removed).reduce((sum, host) => sum + host.capacity, 0),
    drained: [...(state.drained ?? [])],
  };
}

/**
 * Takes a host out of rotation (or puts it back): its holders keep their slots, no new request
 * is granted on it while drained. Returns whether anything changed. Call `serveQueue` after an
 * undrain: waiters the host can take are served at once.
 */
export function setDrained(state: AllocationState, host: string, drained: boolean): boolean {
  const current = state.drained ?? [];
  if (current.includes(host) === drained) return false;
  const next = drained ? [...current, host].sort() : current.filter((name) => name !== host);
  if (next.length > 0) state.drained = next;
  else delete state.drained;
  if (!drained && state.drainedBecause?.[host] !== undefined) {
    const rest = { ...state.drainedBecause };
    delete rest[host];
    if (Object.keys(rest).length > 0) state.drainedBecause = rest;
    else delete state.drainedBecause;
  }
  return true;
}

export function isDrained(state: AllocationState, host: string): boolean {
  return state.drained?.includes(host) === true;
}

/** Drops the holds and queue places of other runs of the request's workflow (see `request`). */
function dropOtherRuns(state: AllocationState, requestId: string): void {
  const runId = runIdOfRequest(requestId);
  if (runId === undefined) return; // a request of the older form does not say its run
  const workflowId = workflowIdOfRequest(requestId);
  const stale = (id: string) =>
    workflowIdOfRequest(id) === workflowId && runIdOfRequest(id) !== runId;
  for (const host of Object.keys(state.holders)) {
    for (const id of state.holders[host].filter(stale)) release(state, id);
  }
  state.queue = state.queue.filter((waiter) => !stale(waiter.requestId));
}

function holdersOf(state: AllocationState, host: string): string[] {
  return state.holders[host] ?? [];
}

function holdingHost(state: AllocationState, requestId: string): string | undefined {
  return Object.keys(state.holders).find((host) => state.holders[host].includes(requestId));
}

function freeSlots(state: AllocationState, host: string): number {
  return state.hosts[host].concurrency - holdersOf(state, host).length;
}

/** Whether a host serves what the request is for: builds and Machines never share a host. */
function serves(host: AllocatedHost, req: Pick<SlotRequest, 'serves'>): boolean {
  return (host.serves ?? 'builds') === (req.serves ?? 'builds');
}

/** Whether this host could take this waiter's request right now. */
function eligible(
  state: AllocationState,
  host: string,
  { excluded, serves: wants }: Pick<SlotRequest, 'excluded' | 'serves'>,
): boolean {
  const entry = state.hosts[host];
  return (
    entry !== undefined &&
    !entry.removed &&
    serves(entry, { serves: wants }) &&
    !isDrained(state, host) &&
    !excluded.includes(host) &&
    state.health[host]?.openUntil === undefined &&
    freeSlots(state, host) > 0
  );
}

/**
 * The eligible host with the most free slots, at random among equals (the rule of the
 * multi-platform-controller).
 */
function choose(
  state: AllocationState,
  req: Pick<SlotRequest, 'excluded' | 'serves'>,
  random: () => number,
): string | undefined {
  // Sorted, so the choice does not depend on the order keys were inserted in.
  const candidates = Object.keys(state.hosts)
    .sort()
    .filter((host) => eligible(state, host, req));
  if (candidates.length === 0) return undefined;
  const most = Math.max(...candidates.map((host) => freeSlots(state, host)));
  const best = candidates.filter((host) => freeSlots(state, host) === most);
  if (best.length === 1) return best[0];
  return best[Math.min(best.length - 1, Math.floor(random() * best.length))];
}

/** Turns every waiter away (say, a pool that cannot start VMs); returns them to be told why. */
export function exhaustQueue(
  state: AllocationState,
  reason: string,
): Array<{ requestId: string; reason: string }> {
  const turnedAway = state.queue.map((waiter) => ({ requestId: waiter.requestId, reason }));
  state.queue = [];
  return turnedAway;
}

/** Why no configured host can ever serve this request, or undefined while one can. */
function exhaustion(
  state: AllocationState,
  req: Pick<SlotRequest, 'excluded' | 'serves'>,
): string | undefined {
  const { excluded } = req;
  if (state.elastic) return undefined;
  const configured = Object.keys(state.hosts)
    .sort()
    .filter((host) => !state.hosts[host].removed);
  const live = configured.filter((host) => serves(state.hosts[host], req));
  const failed = excluded.length > 0 ? ` (this TaskRun failed on: ${excluded.join(', ')})` : '';
  if (live.length === 0 && configured.length > 0) {
    return req.serves === 'machines'
      ? 'no host of this platform serves Cluster API Machines: a Machine runs only on a host ' +
          'with host.<name>.serves: machines in host-config (never on a build host)'
      : 'every host of this platform serves Cluster API Machines (host.<name>.serves: machines); ' +
          'builds need a host that serves builds';
  }
  if (live.length === 0) return `no hosts are configured for this platform${failed}`;
  if (live.every((host) => excluded.includes(host))) {
    return `provisioning failed on every configured host: ${live.join(', ')}`;
  }
  return undefined;
}

function grant(state: AllocationState, requestId: string, host: string): Host {
  state.holders[host] = [...holdersOf(state, host), requestId];
  return slotHost(state.hosts[host]);
}

/** A copy without allocator bookkeeping: what a TaskRun gets to keep. */
function slotHost({ name, address, user, secret, concurrency, sudoCommands }: Host): Host {
  return { name, address, user, secret, concurrency, sudoCommands: [...sudoCommands] };
}

function openCircuits(state: AllocationState): string[] {
  return Object.keys(state.health)
    .sort()
    .filter(
      (name) =>
        state.hosts[name] !== undefined &&
        !state.hosts[name].removed &&
        state.health[name].openUntil !== undefined &&
        !state.health[name].probing,
    );
}

function dropIfGone(state: AllocationState, host: string): void {
  if (!state.hosts[host]?.removed || holdersOf(state, host).length > 0) return;
  delete state.hosts[host];
  delete state.health[host];
}
