// The dynamic pool's pure state machine (workflows/allocator/pool-state.ts): when to launch, when to
// retire, when to terminate, and what to do with VMs found in the cloud.
import { describe, expect, it } from '@jest/globals';
import {
  applyHosts,
  emptyState,
  recordFailure,
  release,
  request,
  serveQueue,
} from '../workflows/allocator/allocation.js';
import {
  POOL_FAILURES_TO_EXHAUST,
  addLaunches,
  adopt,
  emptyPool,
  launchesNeeded,
  poolClaims,
  poolHosts,
  poolWakeUp,
  recordPoolFailure,
  retire,
  type PoolSpec,
  type PoolState,
  recordServed,
  recordUnservable,
} from '../workflows/allocator/pool-state.js';

const spec = (overrides: Partial<PoolSpec> = {}): PoolSpec => ({
  platform: 'linux/arm64',
  concurrency: 2,
  maxInstances: 5,
  maxAgeMs: 60_000,
  bootTimeoutMs: 30_000,
  checkIntervalMs: 1_000,
  user: 'ec2-user',
  secret: 'vm-ssh',
  sudoCommands: [],
  ...overrides,
});

function elastic() {
  const alloc = emptyState();
  alloc.elastic = true;
  return alloc;
}

function queue(alloc: ReturnType<typeof emptyState>, ...ids: string[]): void {
  for (const id of ids) {
    expect(request(alloc, { requestId: `${id}#1`, excluded: [], requestedAt: 0 }, () => 0)).toEqual(
      expect.objectContaining({ status: 'queued' }),
    );
  }
}

/** Boots every launching VM at once: it gets an id and address and becomes ready. */
function bootAll(pool: PoolState): void {
  for (const [i, vm] of pool.vms.entries()) {
    if (vm.phase === 'launching' || vm.phase === 'booting') {
      Object.assign(vm, { id: vm.id ?? `i-${i}-${vm.key.length}`, phase: 'ready' });
      vm.address = `10.0.0.${i + 1}`;
    }
  }
}

/** An elastic allocator whose pool has `count` VMs up and serving as hosts. */
function readyPool(count: number) {
  const alloc = elastic();
  const pool = emptyPool('e1');
  addLaunches(pool, spec(), count, 0);
  bootAll(pool);
  applyHosts(alloc, poolHosts(pool, spec()));
  return { alloc, pool };
}

describe('a dynamic pool', () => {
  it('launches only as many VMs as queued waiters need, counting VMs still booting', () => {
    const alloc = elastic();
    const pool = emptyPool('e1');
    queue(alloc, 'a', 'b', 'c');
    expect(launchesNeeded(pool, alloc, spec())).toBe(2);
    addLaunches(pool, spec(), 2, 0);
    expect(launchesNeeded(pool, alloc, spec())).toBe(0);
    queue(alloc, 'd');
    expect(launchesNeeded(pool, alloc, spec())).toBe(0); // the second VM's spare slot
    queue(alloc, 'e');
    expect(launchesNeeded(pool, alloc, spec())).toBe(1);
  });

  it('never goes past max-instances, whatever the queue', () => {
    const alloc = elastic();
    const pool = emptyPool('e1');
    queue(alloc, ...Array.from({ length: 20 }, (_, i) => `w${i}`));
    expect(launchesNeeded(pool, alloc, spec({ maxInstances: 3 }))).toBe(3);
    addLaunches(pool, spec(), 3, 0);
    expect(launchesNeeded(pool, alloc, spec({ maxInstances: 3 }))).toBe(0);
  });

  it('serves waiters from free slots of ready VMs before launching, except VMs they failed on', () => {
    const { alloc, pool } = readyPool(1);
    const vm = pool.vms[0]!.id!;
    expect(request(alloc, { requestId: 'a#1', excluded: [], requestedAt: 0 }, () => 0)).toEqual(
      expect.objectContaining({ status: 'granted' }),
    );
    expect(request(alloc, { requestId: 'b#2', excluded: [vm], requestedAt: 0 }, () => 0)).toEqual(
      expect.objectContaining({ status: 'queued' }),
    );
    expect(launchesNeeded(pool, alloc, spec())).toBe(1); // its failed VM does not count for it
  });

  it('queues instead of refusing while it has no VMs, and turns waiters away after repeated failures', () => {
    const alloc = elastic();
    queue(alloc, 'a');
    expect(serveQueue(alloc, () => 0).exhausted).toEqual([]);
    const pool = emptyPool('e1');
    for (let i = 1; i < POOL_FAILURES_TO_EXHAUST; i++) {
      expect(recordPoolFailure(pool, 'quota exceeded')).toBeUndefined();
    }
    expect(recordPoolFailure(pool, 'quota exceeded')).toMatch(/3 VMs in a row .*quota exceeded/);
    expect(pool.failures).toBe(0);
  });

  it('retires VMs at max-age, keeps them while builds hold slots, then terminates them', () => {
    const { alloc, pool } = readyPool(2);
    const [busy, idle] = pool.vms.map((vm) => vm.id!);
    alloc.holders[busy!] = ['a#1'];
    expect(poolWakeUp(pool, spec())).toBe(60_000);

    retire(pool, alloc, spec(), 59_999);
    expect(pool.vms.map((vm) => vm.phase)).toEqual(['ready', 'ready']);
    retire(pool, alloc, spec(), 60_000);
    applyHosts(alloc, poolHosts(pool, spec()));
    expect(pool.vms.map((vm) => vm.phase)).toEqual(['retiring', 'terminating']);
    expect(alloc.hosts[busy!]?.removed).toBe(true); // takes no new work
    expect(alloc.hosts[idle!]).toBeUndefined();

    release(alloc, 'a#1');
    retire(pool, alloc, spec(), 60_001);
    expect(pool.vms.map((vm) => vm.phase)).toEqual(['terminating', 'terminating']);
  });

  it('retires a VM whose health circuit opened instead of probing it, and replaces it', () => {
    const { alloc, pool } = readyPool(1);
    const vm = pool.vms[0]!.id!;
    for (let i = 0; i < 3; i++) recordFailure(alloc, vm, 1_000);
    queue(alloc, 'a');
    retire(pool, alloc, spec(), 1_000);
    applyHosts(alloc, poolHosts(pool, spec()));
    expect(pool.vms[0]!.phase).toBe('terminating');
    expect(alloc.hosts[vm]).toBeUndefined();
    expect(launchesNeeded(pool, alloc, spec())).toBe(1);
  });

  it('says so once VMs in a row could take no build, and counts again after a build was served', () => {
    const { alloc, pool } = readyPool(1);
    const vm = pool.vms[0]!.id!;
    for (let i = 0; i < 3; i++) recordFailure(alloc, vm, 1_000);
    expect(retire(pool, alloc, spec(), 1_000).map((v) => v.id)).toEqual([vm]);
    expect(retire(pool, alloc, spec(), 1_000)).toEqual([]); // once per VM
    expect(recordUnservable(pool, 'i-a')).toBeUndefined();
    expect(recordUnservable(pool, 'i-b')).toBeUndefined();
    recordServed(pool);
    expect(recordUnservable(pool, 'i-c')).toBeUndefined();
    expect(recordUnservable(pool, 'i-d')).toBeUndefined();
    expect(recordUnservable(pool, 'i-e')).toMatch(
      /3 VMs in a row could not take a build .*the last VM i-e.*ssh-secret/,
    );
    expect(recordUnservable(pool, 'i-f')).toBeUndefined(); // counting starts over
  });

  it('retires every VM when the platform leaves the config', () => {
    const { alloc, pool } = readyPool(1);
    retire(pool, alloc, undefined, 1);
    expect(pool.vms[0]!.phase).toBe('terminating');
  });

  it('adopts VMs found in the cloud once, keeping their launch time for max-age', () => {
    const pool = emptyPool('e1');
    adopt(pool, spec(), { id: 'i-1', launchedAt: new Date(5_000).toISOString() }, 10_000);
    adopt(pool, spec(), { id: 'i-1' }, 10_000);
    expect(pool.vms).toEqual([
      expect.objectContaining({
        id: 'i-1',
        key: 'adopted:i-1',
        phase: 'booting',
        launchedAt: 5_000,
      }),
    ]);
    expect(poolClaims(pool)).toEqual(['adopted:i-1']);
  });

  it('gives each launch a key of its own, never reused by a rebuilt pool', () => {
    const first = emptyPool('epoch-a');
    const rebuilt = emptyPool('epoch-b');
    const keys = [...addLaunches(first, spec(), 2, 0), ...addLaunches(rebuilt, spec(), 2, 0)].map(
      (vm) => vm.key,
    );
    expect(new Set(keys).size).toBe(4);
    expect(poolClaims(first)).toEqual(keys.slice(0, 2));
  });

  it('never over-launches or over-commits in random traffic, and drains to zero', () => {
    for (const seed of [1, 2, 3]) {
      let x = seed;
      const random = () => (x = (x * 48271) % 2147483647) / 2147483647;
      const s = spec({ maxInstances: 4, concurrency: 2 });
      const alloc = elastic();
      const pool = emptyPool(`e${seed}`);
      const holders: string[] = [];
      let now = 0;
      for (let step = 0; step < 400; step++) {
        now += 1_000;
        const roll = random();
        if (roll < 0.4) {
          const id = `s${seed}-${step}#1`;
          const outcome = request(alloc, { requestId: id, excluded: [], requestedAt: now }, random);
          if (outcome.status === 'granted') holders.push(id);
        } else if (roll < 0.7 && holders.length > 0) {
          release(alloc, holders.splice(Math.floor(random() * holders.length), 1)[0]!);
        } else if (roll < 0.85) bootAll(pool);
        retire(pool, alloc, s, now);
        pool.vms = pool.vms.filter((vm) => vm.phase !== 'terminating'); // terminated at once
        applyHosts(alloc, poolHosts(pool, s));
        addLaunches(pool, s, launchesNeeded(pool, alloc, s), now);
        expect(pool.vms.length).toBeLessThanOrEqual(s.maxInstances);
        expect(launchesNeeded(pool, alloc, s)).toBe(0);
        // Never more VMs coming than the waiters no ready VM can take.
        const coming = pool.vms.filter((vm) => ['launching', 'booting'].includes(vm.phase));
        expect((coming.length - 1) * s.concurrency).toBeLessThan(Math.max(1, alloc.queue.length));
        for (const { requestId } of serveQueue(alloc, random).grants) holders.push(requestId);
        for (const [host, held] of Object.entries(alloc.holders)) {
          expect(held.length).toBeLessThanOrEqual(alloc.hosts[host]?.concurrency ?? s.concurrency);
        }
      }
      // No more traffic: everything is released, and max-age takes every VM away.
      for (const id of holders) release(alloc, id);
      alloc.queue = [];
      bootAll(pool);
      retire(pool, alloc, s, now + s.maxAgeMs);
      expect(pool.vms.every((vm) => vm.phase === 'terminating')).toBe(true);
    }
  });
});
