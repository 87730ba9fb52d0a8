// Benchmark: the bridge in a big cluster. Creates BENCH_TASKRUNS TaskRuns (default 10,000):
// one in 20 a local-platform TaskRun hostflow serves (waited for until its Secret is there),
// the rest ordinary finished Tekton TaskRuns of a few KB that the bridge lists and watches but
// ignores. Prints one JSON line: the bridges' peak RSS (VmHWM) through all of it, and by phase
// (target ≤ 150 MB), heap against RSS from the bridge's metrics, and a full resync's time, twice:
// - coldStartFullListMs: the bridge stopped and started again, from spawn until /readyz says
//   every list+watch has listed everything (it re-signals every served TaskRun: empty index);
// - warmResyncMs: that new bridge's next periodic relist (HOSTFLOW_RESYNC_SECONDS=30), from its
//   relist counter going up until it logs the relist complete (index full: list cost only).
// Nothing triggers a relist on demand in the process, hence the restart and the short interval.
// BENCH_BRIDGE_NODE_OPTIONS (e.g. --max-semi-space-size=1) is the bridges' NODE_OPTIONS, to
// try V8 heap settings against the same figures.
import pLimit from 'p-limit';
import { freePort } from '../local-stack/ports.js';
import { waitFor } from '../local-stack/process.js';
import type { EngineProcess } from '../local-stack/engine.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { startBenchStack } from './stack.js';
import { watchTaskRunSecrets } from './watch.js';
import { peakRssMb, seconds } from './stats.js';
import { benchTaskRun } from './taskruns.js';
import { ordinaryTaskRun, ordinaryTaskRunStatus } from './tekton-taskrun.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const COUNT = Number(process.env.BENCH_TASKRUNS ?? 10_000);
const SERVED_EVERY = 20; // 5 % served
const CREATE_CONCURRENCY = 32;
const RESYNC_SECONDS = 30;
const MB = 1024 * 1024;
const NODE_OPTIONS = process.env.BENCH_BRIDGE_NODE_OPTIONS;

async function main(): Promise<void> {
  if (!Number.isInteger(COUNT) || COUNT < SERVED_EVERY) {
    throw new Error(`BENCH_TASKRUNS must be a whole number ≥ ${SERVED_EVERY}`);
  }
  const metricsAddress = `127.0.0.1:${await freePort()}`;
  const healthAddress = `127.0.0.1:${await freePort()}`;
  const stack = await startBenchStack({ 'local-platforms': 'linux/amd64' }, undefined, undefined, {
    bridgeEnv: {
      HOSTFLOW_METRICS_ADDRESS: metricsAddress,
      HOSTFLOW_HEALTH_ADDRESS: healthAddress,
      ...(NODE_OPTIONS ? { NODE_OPTIONS } : {}),
    },
  });
  try {
    const names = Array.from({ length: COUNT }, (_, i) => `tr-${i}`);
    const served = new Set(names.filter((_, i) => i % SERVED_EVERY === 0));
    const secrets = new Set<string>();
    let allServed!: () => void;
    const servedAll = new Promise<void>((r) => (allServed = r));
    const watch = watchTaskRunSecrets(stack.kc, stack.namespace, (type, name) => {
      if (type !== 'ADDED' || !served.has(name)) return;
      secrets.add(name);
      if (secrets.size === served.size) allServed();
    });
    await watch.ready;

    const limit = pLimit(CREATE_CONCURRENCY);
    const start = Date.now();
    await Promise.all(
      names.map((name, i) =>
        limit(async () => {
          const target = { ...TASKRUN_API, namespace: stack.namespace };
          if (served.has(name)) {
            const body = benchTaskRun(name, stack.namespace, 'linux/amd64');
            await stack.custom.createNamespacedCustomObject({ ...target, body });
            return;
          }
          const body = ordinaryTaskRun(name, stack.namespace, i);
          await stack.custom.createNamespacedCustomObject({ ...target, body });
          await stack.custom.patchNamespacedCustomObjectStatus(
            { ...target, name, body: { status: ordinaryTaskRunStatus(name) } },
            MERGE_PATCH,
          );
        }),
      ),
    );
    const createdAt = Date.now();
    await servedAll;
    const servedAt = Date.now();
    watch.stop();
    const stored = await stack.custom.getNamespacedCustomObject({
      ...TASKRUN_API,
      namespace: stack.namespace,
      name: names[1]!,
    });
    const afterServed = await memory(metricsAddress);
    const peakWhileCreating = peakRssMb(stack.bridge.pid);

    // Cold: a new bridge lists everything from nothing.
    await stack.bridge.stop();
    const duringCold = sampleMemory(metricsAddress);
    const restartAt = Date.now();
    const bridge = await stack.startBridge('bridge-restarted', {
      HOSTFLOW_RESYNC_SECONDS: String(RESYNC_SECONDS),
    });
    await waitFor('the restarted bridge to be ready', () => ready(healthAddress), {
      process: bridge,
      intervalMs: 50,
      timeoutMs: 600_000,
    });
    const coldStartFullListMs = Date.now() - restartAt;
    const peakDuringCold = duringCold.stop();
    const afterCold = await memory(metricsAddress);
    const peakAfterCold = peakRssMb(bridge.pid);

    // Warm: its next periodic relist, with the index full.
    await waitFor('the periodic relist to start', () => relistsStarted(metricsAddress, 2), {
      process: bridge,
      intervalMs: 50,
      timeoutMs: (RESYNC_SECONDS + 60) * 1000,
    });
    const warmStart = Date.now();
    const duringWarm = sampleMemory(metricsAddress);
    const underContract = await waitFor(
      'the periodic relist to complete',
      () => relistsCompleted(bridge, 2),
      { process: bridge, intervalMs: 50, timeoutMs: 600_000 },
    );
    const warmResyncMs = Date.now() - warmStart;
    const peakDuringWarm = duringWarm.stop();
    const afterWarm = await memory(metricsAddress);
    const peakRss = {
      creatingAndServing: peakWhileCreating,
      coldStartFullList: peakAfterCold,
      warmResync: peakRssMb(bridge.pid),
    };

    console.log(
      JSON.stringify({
        bench: 'bridge-scale',
        taskRuns: COUNT,
        served: served.size,
        ...(NODE_OPTIONS ? { bridgeNodeOptions: NODE_OPTIONS } : {}),
        ordinaryTaskRunKb: Math.round(JSON.stringify(stored).length / 102.4) / 10,
        createSeconds: seconds(createdAt - start),
        lastSecretAfterCreatesMs: servedAt - createdAt,
        bridgePeakRssMb: Math.max(...Object.values(peakRss)),
        bridgePeakRssMbByPhase: peakRss,
        coldStartFullListMs,
        warmResyncMs,
        underContractAtResync: underContract,
        bridgeMemoryMb: {
          afterServed,
          maxDuringColdStart: peakDuringCold,
          afterColdStart: afterCold,
          maxDuringWarmResync: peakDuringWarm,
          afterWarmResync: afterWarm,
        },
        targets: { bridgePeakRssMb: 150 },
      }),
    );
  } finally {
    await stack.stop();
  }
}

/** The bridge's own account of its memory (prom-client's default metrics), in MB. */
async function memory(address: string) {
  const text = await metrics(address);
  const mb = (name: string) => Math.round(metric(text, name) / MB);
  return {
    rss: mb('process_resident_memory_bytes'),
    heapUsed: mb('nodejs_heap_size_used_bytes'),
    heapTotal: mb('nodejs_heap_size_total_bytes'),
    external: mb('nodejs_external_memory_bytes'),
  };
}

type Memory = Awaited<ReturnType<typeof memory>>;

/**
 * The highest of each figure the bridge reports while a relist runs, polled every 100 ms: its
 * event loop answers between list pages, so this sees the heap as the pages come and go.
 */
function sampleMemory(address: string): { stop(): Memory } {
  const max: Memory = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0 };
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    memory(address)
      .then((m) => {
        for (const key of Object.keys(max) as Array<keyof Memory>)
          max[key] = Math.max(max[key], m[key]);
      })
      .catch(() => undefined) // not listening yet: a restarted bridge is still starting
      .finally(() => (busy = false));
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return max;
    },
  };
}

async function metrics(address: string): Promise<string> {
  const res = await fetch(`http://${address}/metrics`);
  if (!res.ok) throw new Error(`GET /metrics on ${address}: ${res.status}`);
  return res.text();
}

/** A sample's value, labels ignored (the bridge labels every sample process="bridge"). */
function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  if (!line) throw new Error(`metric ${name} not found`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function ready(address: string): Promise<true | undefined> {
  const res = await fetch(`http://${address}/readyz`);
  return res.ok ? true : undefined;
}

async function relistsStarted(address: string, count: number): Promise<true | undefined> {
  return metric(await metrics(address), 'hostflow_bridge_relists_total') >= count
    ? true
    : undefined;
}

/** How many TaskRuns the `count`th relist found under contract, once it has completed. */
function relistsCompleted(bridge: EngineProcess, count: number): number | undefined {
  const done = [
    ...bridge.tail(200).matchAll(/relist complete: (\d+) TaskRun\(s\) under contract/g),
  ];
  return done.length >= count ? Number(done[count - 1]![1]) : undefined;
}

main().catch((err) => {
  console.error(`bench bridge-scale: ${(err as Error).message}`);
  process.exit(1);
});
