// Benchmark: a burst of local-platform TaskRuns. Prints one JSON line with the latency of
// "TaskRun created → Secret present" (p50/p90/p99), throughput, cleanup latency and the peak
// RSS of each hostflow process. Targets (DESIGN.md section 9): p50 ≤ 250 ms, p99 ≤ 1 s.
import { Watch } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { SECRET_PREFIX } from '../platform-config/contract.js';
import { startBenchStack } from './stack.js';
import { peakRssMb, summarize } from './stats.js';
import { benchTaskRun, completeTaskRun } from './taskruns.js';

const COUNT = Number(process.env.BENCH_TASKRUNS ?? 500);
const CREATE_CONCURRENCY = 32;

async function main(): Promise<void> {
  const stack = await startBenchStack({ 'local-platforms': 'linux/amd64' });
  try {
    const created = new Map<string, number>();
    const secretAt = new Map<string, number>();
    const secretGoneAt = new Map<string, number>();
    const completedAt = new Map<string, number>();
    let allServed!: () => void;
    let allCleaned!: () => void;
    const served = new Promise<void>((r) => (allServed = r));
    const cleaned = new Promise<void>((r) => (allCleaned = r));
    const watch = await new Watch(stack.kc).watch(
      `/api/v1/namespaces/${stack.namespace}/secrets`,
      {},
      (type: string, obj: { metadata?: { name?: string } }) => {
        const name = obj.metadata?.name?.slice(SECRET_PREFIX.length);
        if (!name) return;
        if (type === 'ADDED' && !secretAt.has(name)) {
          secretAt.set(name, performance.now());
          if (secretAt.size === COUNT) allServed();
        } else if (type === 'DELETED') {
          secretGoneAt.set(name, performance.now());
          if (secretGoneAt.size === COUNT) allCleaned();
        }
      },
      () => undefined,
    );

    const limit = pLimit(CREATE_CONCURRENCY);
    const names = Array.from({ length: COUNT }, (_, i) => `burst-${i}`);
    const start = performance.now();
    await Promise.all(
      names.map((name) =>
        limit(async () => {
          created.set(name, performance.now());
          await stack.custom.createNamespacedCustomObject({
            ...TASKRUN_API,
            namespace: stack.namespace,
            body: benchTaskRun(name, stack.namespace, 'linux/amd64'),
          });
        }),
      ),
    );
    await served;
    const end = Math.max(...secretAt.values());

    // Cleanup: complete every TaskRun and time until its Secret is gone.
    await Promise.all(
      names.map((name) =>
        limit(async () => {
          completedAt.set(name, performance.now());
          await completeTaskRun(stack.custom, stack.namespace, name);
        }),
      ),
    );
    await cleaned;
    watch.abort();

    const latency = names.map((n) => secretAt.get(n)! - created.get(n)!);
    const cleanup = names.map((n) => secretGoneAt.get(n)! - completedAt.get(n)!);
    console.log(
      JSON.stringify({
        bench: 'local-burst',
        taskRuns: COUNT,
        createdToSecretMs: summarize(latency),
        throughputPerSec: Math.round((COUNT / ((end - start) / 1000)) * 10) / 10,
        completedToSecretDeletedMs: summarize(cleanup),
        peakRssMb: { worker: peakRssMb(stack.worker.pid), bridge: peakRssMb(stack.bridge.pid) },
        targets: { p50Ms: 250, p99Ms: 1000 },
      }),
    );
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(`bench local-burst: ${(err as Error).message}`);
  process.exit(1);
});
