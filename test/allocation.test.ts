// The allocator's pure state machine: slots, FIFO queue, exclusions, host health, live config.
import { describe, expect, it } from '@jest/globals';
import {
  HEALTH,
  applyHosts,
  emptyState,
  hostsDueForProbe,
  nextWakeUp,
  recordFailure,
  recordProbe,
  recordSuccess,
  release,
  request,
  serveQueue,
  summary,
  type AllocationState,
} from '../workflows/allocator/allocation.js';
import type { Host } from '../platform-config/host.js';
import type { RequestOutcome } from '../shared/contracts/allocator.js';
import { seededRandom } from '../shared/seeded-random.js';

const slotHost = (name: string, concurrency = 2): Host => ({
  name,
  address: `${name}.example.com`,
  user: 'root',
  secret: `${name}-keys`,
  concurrency,
  sudoCommands: [],
});

function stateWith(...hosts: Host[]): AllocationState {
  const state = emptyState();
  applyHosts(state, hosts);
  return state;
}

const first = () => 0;
const ask = (state: AllocationState, requestId: string, excluded: string[] = [], random = first) =>
  request(state, { requestId, excluded, requestedAt: 0 }, random, 0);
const hostOf = (outcome: RequestOutcome) =>
  outcome.status === 'granted' ? outcome.host.name : outcome.status;
const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** Independent of the implementation: may `host` take a new request excluding `excluded`? */
function mayTake(state: AllocationState, host: string, excluded: string[]): boolean {
  const entry = state.hosts[host];
  return (
    !!entry &&
    !entry.removed &&
    !excluded.includes(host) &&
    state.health[host]?.openUntil === undefined &&
    (state.holders[host]?.length ?? 0) < entry.concurrency
  );
}

/** Structural invariants, as a list of violations (one expect per step keeps the loop fast). */
function violations(state: AllocationState): string[] {
  const found: string[] = [];
  const held = Object.values(state.holders).flat();
  if (new Set(held).size !== held.length) found.push(`a request holds two slots: ${held}`);
  const queued = state.queue.map((waiter) => waiter.requestId);
  if (new Set(queued).size !== queued.length) found.push(`queued twice: ${queued}`);
  if (queued.some((id) => held.includes(id))) found.push('a holder is also queued');
  for (const [host, ids] of Object.entries(state.holders)) {
    if (!state.hosts[host]) found.push(`holders of unknown host ${host}`);
    if (ids.length === 0) found.push(`empty holder list for ${host}`);
  }
  for (const [name, host] of Object.entries(state.hosts)) {
    if (host.removed && !state.holders[name])
      found.push(`removed host ${name} kept without holders`);
  }
  return found;
}

describe('allocation under random operations', () => {
  it.each([1, 2, 3])('never over-commits, double-grants or stalls (seed %i)', (seed) => {
    const random = seededRandom(seed);
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];
    const universe = ['a', 'b', 'c', 'd'];
    let state = stateWith(slotHost('a', 2), slotHost('b', 3));
    let now = 0;
    let next = 0;
    const counts = { immediate: 0, served: 0, exhausted: 0 };

    for (let step = 0; step < 4000; step++) {
      const before = clone(state);
      const roll = random();
      const held = Object.values(state.holders).flat();
      const queued = state.queue.map((waiter) => waiter.requestId);
      if (roll < 0.35) {
        const excluded = universe.filter(() => random() < 0.2);
        const requestId = `r${next++}`;
        const outcome = request(state, { requestId, excluded, requestedAt: now }, random, now);
        if (outcome.status === 'granted') {
          counts.immediate++;
          // Within capacity, and no earlier waiter could have used that slot (no overtaking).
          expect(mayTake(before, outcome.host.name, excluded)).toBe(true);
          for (const waiter of before.queue) {
            expect(mayTake(before, outcome.host.name, waiter.excluded)).toBe(false);
          }
        } else if (outcome.status === 'exhausted') {
          counts.exhausted++;
          const live = Object.keys(before.hosts).filter((h) => !before.hosts[h].removed);
          expect(live.every((h) => excluded.includes(h))).toBe(true);
        } else {
          expect(outcome.position).toBe(state.queue.length);
        }
      } else if (roll < 0.45 && held.length + queued.length > 0) {
        const requestId = pick([...held, ...queued]);
        const outcome = request(state, { requestId, excluded: [], requestedAt: now }, random, now);
        expect(state).toEqual(before); // a repeat changes nothing
        if (held.includes(requestId)) expect(outcome.status).toBe('granted');
        else expect(outcome).toEqual({ status: 'queued', position: queued.indexOf(requestId) + 1 });
      } else if (roll < 0.75) {
        release(state, pick([...held, ...queued, 'unknown']));
      } else if (roll < 0.83) {
        const hosts = universe.filter(() => random() < 0.6);
        applyHosts(
          state,
          hosts.map((h) => slotHost(h, 1 + Math.floor(random() * 3))),
        );
      } else if (roll < 0.9) {
        recordFailure(state, pick(universe), now);
      } else if (roll < 0.93) {
        recordSuccess(state, pick(universe));
      } else if (roll < 0.97) {
        now += 30_000;
        for (const host of hostsDueForProbe(state, now))
          recordProbe(state, host, random() < 0.5, now);
      } else {
        state = clone(state); // continue-as-new
      }

      // The workflow serves the queue after every change. Replay its grants one by one on a copy:
      // each must fit at that moment, and no earlier waiter still waiting could have used it.
      const sim = clone(state);
      const service = serveQueue(state, random, now);
      counts.served += service.grants.length;
      const answered = [...service.grants, ...service.exhausted].map((g) => g.requestId);
      for (const { requestId, host } of service.grants) {
        const index = sim.queue.findIndex((w) => w.requestId === requestId);
        expect(mayTake(sim, host.name, sim.queue[index].excluded)).toBe(true);
        for (const earlier of sim.queue.slice(0, index)) {
          if (!answered.includes(earlier.requestId)) {
            expect(mayTake(sim, host.name, earlier.excluded)).toBe(false);
          }
        }
        sim.holders[host.name] = [...(sim.holders[host.name] ?? []), requestId];
      }
      for (const { requestId } of service.exhausted) {
        const waiter = sim.queue.find((w) => w.requestId === requestId)!;
        const live = Object.keys(sim.hosts).filter((h) => !sim.hosts[h].removed);
        expect(live.every((h) => waiter.excluded.includes(h))).toBe(true);
      }
      expect(violations(state)).toEqual([]);
      // Nothing stalls: after serving, no waiter could take any slot.
      const stalled = state.queue.filter((waiter) =>
        Object.keys(state.hosts).some((h) => mayTake(state, h, waiter.excluded)),
      );
      expect(stalled).toEqual([]);
    }
    // The sequence exercised every path.
    expect(counts.immediate).toBeGreaterThan(100);
    expect(counts.served).toBeGreaterThan(100);
    expect(counts.exhausted).toBeGreaterThan(10);
  });
});

describe('host choice', () => {
  it('takes the host with the most free slots', () => {
    const state = stateWith(slotHost('a', 2), slotHost('b', 4));
    expect(hostOf(ask(state, 'r1'))).toBe('b'); // 2 vs 4 free
    expect(hostOf(ask(state, 'r2'))).toBe('b'); // 2 vs 3 free
    ask(state, 'r3'); // a tie: 2 vs 2
    ask(state, 'r4');
    expect(summary(state, 0).hosts.map((h) => h.inUse)).toEqual([1, 3]);
  });

  it('chooses at random among equally free hosts', () => {
    const random = seededRandom(42);
    const counts: Record<string, number> = {};
    for (let trial = 0; trial < 400; trial++) {
      const state = stateWith(slotHost('a'), slotHost('b'), slotHost('c', 1));
      const host = hostOf(ask(state, 'r', [], random));
      counts[host] = (counts[host] ?? 0) + 1;
    }
    expect(Object.keys(counts).sort()).toEqual(['a', 'b']);
    expect(counts.a).toBeGreaterThan(150);
    expect(counts.b).toBeGreaterThan(150);
    // The random value decides, over hosts in name order.
    expect(hostOf(ask(stateWith(slotHost('b'), slotHost('a')), 'r', [], () => 0))).toBe('a');
    expect(hostOf(ask(stateWith(slotHost('a'), slotHost('b')), 'r', [], () => 0.999))).toBe('b');
  });
});

describe('the queue', () => {
  it('serves 10 waiters over 2 hosts x 2 slots in arrival order', () => {
    const state = stateWith(slotHost('a'), slotHost('b'));
    const holders = ['h1', 'h2', 'h3', 'h4'];
    for (const id of holders) expect(ask(state, id).status).toBe('granted');
    const waiters = Array.from({ length: 10 }, (_, i) => `w${i}`);
    waiters.forEach((id, i) =>
      expect(ask(state, id)).toEqual({ status: 'queued', position: i + 1 }),
    );
    expect(summary(state, 0).queue).toEqual(waiters);

    const served: string[] = [];
    const active = [...holders];
    while (active.length > 0) {
      release(state, active.shift()!);
      const { grants, exhausted } = serveQueue(state, first, 0);
      expect(exhausted).toEqual([]);
      expect(grants.length).toBeLessThanOrEqual(1);
      for (const grant of grants) {
        served.push(grant.requestId);
        active.push(grant.requestId);
      }
    }
    expect(served).toEqual(waiters);
    expect(state.queue).toEqual([]);
  });

  it('does not let a newcomer overtake a waiter that could use the free slot', () => {
    const state = stateWith(slotHost('a', 1), slotHost('b', 1));
    ask(state, 'h1');
    ask(state, 'h2');
    expect(ask(state, 'w1')).toEqual({ status: 'queued', position: 1 });
    release(state, 'h1'); // the workflow has not served the queue yet
    expect(ask(state, 'late')).toEqual({ status: 'queued', position: 2 });
    expect(serveQueue(state, first, 0).grants.map((g) => g.requestId)).toEqual(['w1']);
  });

  it('grants a newcomer a slot that no waiter can use, and skips a waiter nothing fits', () => {
    const state = stateWith(slotHost('a', 1), slotHost('b', 1));
    ask(state, 'on-a', ['b']);
    ask(state, 'on-b', ['a']);
    expect(ask(state, 'not-a', ['a'])).toEqual({ status: 'queued', position: 1 });
    release(state, 'on-a');
    expect(hostOf(ask(state, 'any'))).toBe('a'); // not-a could not have used it
    release(state, 'any');
    expect(ask(state, 'also-any')).toEqual({ status: 'granted', host: slotHost('a', 1) });
    release(state, 'also-any');
    ask(state, 'not-b', ['b']);
    expect(state.queue.map((w) => w.requestId)).toEqual(['not-a']);
    // not-a waits for b; a later waiter that can use a is not held up behind it.
    ask(state, 'on-a-2');
    release(state, 'not-b');
    expect(serveQueue(state, first, 0).grants.map((g) => [g.requestId, g.host.name])).toEqual([
      ['on-a-2', 'a'],
    ]);
    release(state, 'on-b');
    expect(serveQueue(state, first, 0).grants.map((g) => [g.requestId, g.host.name])).toEqual([
      ['not-a', 'b'],
    ]);
  });
});

describe('exclusion and exhaustion', () => {
  it('never grants a host this TaskRun failed on, and names the failed hosts when none is left', () => {
    const state = stateWith(slotHost('a'), slotHost('b'));
    for (let i = 0; i < 20; i++)
      expect(hostOf(ask(state, `r${i}`, ['a'], seededRandom(i)))).not.toBe('a');
    const exhausted = ask(stateWith(slotHost('a'), slotHost('b')), 'r', ['b', 'a']);
    expect(exhausted).toEqual({
      status: 'exhausted',
      reason: 'provisioning failed on every configured host: a, b',
    });
    expect(ask(emptyState(), 'r')).toEqual({
      status: 'exhausted',
      reason: 'no hosts are configured for this platform',
    });
    expect(ask(emptyState(), 'r', ['a'])).toMatchObject({
      reason: expect.stringContaining('this TaskRun failed on: a'),
    });
  });

  it('tells waiters left with no usable host instead of letting them wait forever', () => {
    const state = stateWith(slotHost('a', 1), slotHost('b', 1));
    ask(state, 'h1');
    ask(state, 'h2');
    ask(state, 'needs-b', ['a']);
    ask(state, 'any');
    applyHosts(state, [slotHost('a', 1)]); // b leaves the config
    const { grants, exhausted } = serveQueue(state, first, 0);
    expect(grants).toEqual([]);
    expect(exhausted).toEqual([
      { requestId: 'needs-b', reason: 'provisioning failed on every configured host: a' },
    ]);
    expect(summary(state, 0).queue).toEqual(['any']);
    applyHosts(state, []);
    expect(serveQueue(state, first, 0).exhausted.map((e) => e.requestId)).toEqual(['any']);
  });
});

describe('idempotency', () => {
  it('gives a retried request its existing slot or place, and ignores repeated releases', () => {
    const state = stateWith(slotHost('a', 1));
    const granted = ask(state, 'r1');
    expect(ask(state, 'r1')).toEqual(granted);
    expect(state.holders).toEqual({ a: ['r1'] });
    expect(ask(state, 'r2')).toEqual({ status: 'queued', position: 1 });
    expect(ask(state, 'r2')).toEqual({ status: 'queued', position: 1 });
    expect(state.queue).toHaveLength(1);

    release(state, 'r2'); // a queued request leaves the queue
    release(state, 'r2');
    expect(state.queue).toEqual([]);
    release(state, 'r1');
    release(state, 'r1');
    release(state, 'never-seen');
    expect(state).toEqual(stateWith(slotHost('a', 1)));
  });

  it('keeps the state plain and independent of the caller objects', () => {
    const host = slotHost('a');
    const excluded = ['x'];
    const state = stateWith(host);
    ask(state, 'r1');
    ask(state, 'r2');
    ask(state, 'r3', excluded);
    host.sudoCommands.push('/bin/sh');
    excluded.push('a');
    expect(state.hosts.a.sudoCommands).toEqual([]);
    expect(state.queue[0].excluded).toEqual(['x']);
    expect(clone(state)).toEqual(state);
  });
});

describe('host health', () => {
  const MINUTE = 60_000;

  it('opens the circuit after repeated failures; holders keep their slots', () => {
    const state = stateWith(slotHost('a', 3), slotHost('b', 1));
    ask(state, 'on-a', ['b']);
    recordFailure(state, 'a', 0);
    recordSuccess(state, 'a'); // a success in between resets the count
    recordFailure(state, 'a', 0);
    recordFailure(state, 'a', 0);
    expect(summary(state, 0).hosts[0]).toMatchObject({ health: 'healthy', consecutiveFailures: 2 });
    expect(hostOf(ask(state, 'still-a', ['b']))).toBe('a');

    recordFailure(state, 'a', 1_000);
    expect(HEALTH.failuresToOpen).toBe(3);
    expect(summary(state, 1_000).hosts[0]).toMatchObject({
      name: 'a',
      inUse: 2,
      health: 'unhealthy',
      probeInMs: HEALTH.firstBackoffMs,
    });
    expect(hostOf(ask(state, 'r1'))).toBe('b'); // a has more free slots, but takes no new work
    expect(ask(state, 'r2')).toEqual({ status: 'queued', position: 1 });
    expect(state.holders.a).toEqual(['on-a', 'still-a']);
    release(state, 'r1');
    expect(serveQueue(state, first, 0).grants.map((g) => g.host.name)).toEqual(['b']);
  });

  it('probes when the back-off elapses, doubling it per failed probe up to 30 minutes', () => {
    const state = stateWith(slotHost('a'));
    for (let i = 0; i < HEALTH.failuresToOpen; i++) recordFailure(state, 'a', 0);
    expect(nextWakeUp(state, 0)).toBe(MINUTE);
    expect(hostsDueForProbe(state, MINUTE - 1)).toEqual([]);

    let now = MINUTE;
    const backoffs: number[] = [];
    for (let probe = 0; probe < 8; probe++) {
      expect(hostsDueForProbe(state, now)).toEqual(['a']);
      expect(hostsDueForProbe(state, now)).toEqual([]); // already probing
      expect(summary(state, now).hosts[0].health).toBe('probing');
      expect(nextWakeUp(state, now)).toBeUndefined(); // a probing circuit waits for its result
      recordProbe(state, 'a', false, now);
      backoffs.push(state.health.a.backoffMs!);
      expect(nextWakeUp(state, now)).toBe(now + state.health.a.backoffMs!);
      now += state.health.a.backoffMs!;
    }
    expect(backoffs.map((ms) => ms / MINUTE)).toEqual([2, 4, 8, 16, 30, 30, 30, 30]);
    expect(ask(state, 'r')).toEqual({ status: 'queued', position: 1 });

    expect(hostsDueForProbe(state, now)).toEqual(['a']);
    recordProbe(state, 'a', true, now);
    expect(state.health).toEqual({});
    expect(nextWakeUp(state, now)).toBeUndefined();
    expect(serveQueue(state, first, now).grants.map((g) => g.requestId)).toEqual(['r']);
  });

  it('closes the circuit on a success, and ignores a probe result that comes too late', () => {
    const state = stateWith(slotHost('a'));
    for (let i = 0; i < HEALTH.failuresToOpen; i++) recordFailure(state, 'a', 0);
    expect(hostsDueForProbe(state, MINUTE)).toEqual(['a']);
    recordSuccess(state, 'a');
    recordProbe(state, 'a', false, MINUTE);
    expect(state.health).toEqual({});
    expect(hostOf(ask(state, 'r'))).toBe('a');
    recordFailure(state, 'unknown', 0); // a host not configured any more
    expect(state.health).toEqual({});
  });

  it('wakes up for the earliest due probe, never in the past', () => {
    const state = stateWith(slotHost('a'), slotHost('b'));
    for (let i = 0; i < HEALTH.failuresToOpen; i++) recordFailure(state, 'a', 5_000);
    for (let i = 0; i < HEALTH.failuresToOpen; i++) recordFailure(state, 'b', 1_000);
    expect(nextWakeUp(state, 0)).toBe(1_000 + MINUTE);
    expect(nextWakeUp(state, 10 * MINUTE)).toBe(10 * MINUTE);
    expect(hostsDueForProbe(state, 10 * MINUTE)).toEqual(['a', 'b']);
  });
});

describe('live config', () => {
  it('lets a removed host finish its work, then drops it; re-adding serves waiters', () => {
    const state = stateWith(slotHost('a', 2), slotHost('b', 1));
    ['h1', 'h2', 'h3'].forEach((id) => ask(state, id));
    expect(state.holders).toEqual({ a: ['h1', 'h2'], b: ['h3'] });
    ask(state, 'w1');
    recordFailure(state, 'a', 0);
    applyHosts(state, [slotHost('b', 1)]);
    expect(summary(state, 0).hosts.map((h) => [h.name, h.inUse, h.removed])).toEqual([
      ['a', 2, true],
      ['b', 1, false],
    ]);
    expect(summary(state, 0).capacity).toBe(1);
    release(state, 'h1');
    expect(serveQueue(state, first, 0).grants).toEqual([]); // a has a free slot but no new work
    expect(state.holders.a).toEqual(['h2']);
    release(state, 'h2');
    expect(Object.keys(state.hosts)).toEqual(['b']);
    expect(state.health).toEqual({}); // its health left with it

    applyHosts(state, [slotHost('b', 1), slotHost('c', 2)]);
    expect(serveQueue(state, first, 0).grants).toEqual([
      { requestId: 'w1', host: slotHost('c', 2) },
    ]);
  });

  it('re-adding a removed host that still has holders puts it back in service', () => {
    const state = stateWith(slotHost('a', 2));
    ask(state, 'h1');
    applyHosts(state, []);
    expect(ask(state, 'r1')).toMatchObject({ status: 'exhausted' });
    applyHosts(state, [slotHost('a', 2)]);
    expect(state.hosts.a.removed).toBeUndefined();
    expect(hostOf(ask(state, 'r2'))).toBe('a');
  });

  it('applies a concurrency change at once without revoking held slots', () => {
    const state = stateWith(slotHost('a', 3));
    ['h1', 'h2', 'h3'].forEach((id) => ask(state, id));
    applyHosts(state, [slotHost('a', 1)]);
    expect(state.holders.a).toEqual(['h1', 'h2', 'h3']);
    expect(ask(state, 'w1')).toEqual({ status: 'queued', position: 1 });
    release(state, 'h1');
    release(state, 'h2');
    expect(serveQueue(state, first, 0).grants).toEqual([]); // 1 holder = concurrency 1
    release(state, 'h3');
    expect(serveQueue(state, first, 0).grants.map((g) => g.requestId)).toEqual(['w1']);
    ask(state, 'w2');
    applyHosts(state, [slotHost('a', 4)]);
    expect(serveQueue(state, first, 0).grants).toEqual([
      { requestId: 'w2', host: slotHost('a', 4) },
    ]);
  });
});

describe('continue-as-new', () => {
  /** A scripted mixed sequence; returns every outcome so two runs can be compared. */
  function run(state: AllocationState, random: () => number, from: number, to: number): unknown[] {
    const outcomes: unknown[] = [];
    for (let step = from; step < to; step++) {
      const now = step * 20_000;
      const id = `r${step}`;
      switch (step % 7) {
        case 0:
        case 1:
        case 4:
          outcomes.push(ask(state, id, step % 5 === 0 ? ['a'] : [], random));
          break;
        case 2:
          release(state, `r${step - 2}`);
          break;
        case 3:
          recordFailure(state, ['a', 'b', 'c'][step % 3], now);
          break;
        case 5:
          outcomes.push(hostsDueForProbe(state, now));
          for (const host of Object.keys(state.health))
            recordProbe(state, host, step % 2 === 0, now);
          break;
        case 6:
          applyHosts(state, [slotHost('a', 2), slotHost('b', 1 + (step % 3)), slotHost('c', 2)]);
          break;
      }
      outcomes.push(serveQueue(state, random, now), nextWakeUp(state, now));
    }
    outcomes.push(summary(state, to * 20_000));
    return outcomes;
  }

  it('behaves identically after a JSON round trip mid-sequence', () => {
    const live = stateWith(slotHost('a', 2), slotHost('b', 2), slotHost('c', 2));
    run(live, seededRandom(7), 0, 150);
    expect(live.queue.length + Object.keys(live.health).length).toBeGreaterThan(0);
    const carried = clone(live);
    expect(carried).toEqual(live);
    const liveOutcomes = run(live, seededRandom(8), 150, 400);
    const carriedOutcomes = run(carried, seededRandom(8), 150, 400);
    expect(carriedOutcomes).toEqual(liveOutcomes);
    expect(JSON.stringify(carried)).toBe(JSON.stringify(live));
  });
});
