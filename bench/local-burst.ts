// Benchmark: a burst of local-platform TaskRuns. Prints one JSON line with the latency of
// "TaskRun created → Secret present" (p50/p90/p99), throughput, cleanup latency and the peak
// RSS of each hostflow process; where the time goes: each stage of a TaskRun from its workflow
// history, events and workflow tasks per TaskRun, and the CPU each process spent. Targets
// (docs/architecture.md, "Targets"): p50 ≤ 250 ms, p99 ≤ 1 s. BENCH_WORKERS=2 BENCH_BRIDGES=2 runs the same
// burst scaled out (bench `local-burst-scaled`): workers share the task queue, and the bridges
// both watch every TaskRun and signal idempotently (signalWithStart), with no leader election.
import { Client, Connection } from '@temporalio/client';
import pLimit from 'p-limit';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { cpuByProcess, cpuSpent } from './cpu.js';
import { historyStages } from './history-stages.js';
import { startBenchStack } from './stack.js';
import { watchTaskRunSecrets } from './watch.js';
import { peakRssMb, perSecond, summarize } from './stats.js';
import { benchTaskRun, completeTaskRun } from './taskruns.js';

const COUNT = Number(process.env.BENCH_TASKRUNS ?? 500);
const CREATE_CONCURRENCY = 32;
const WORKERS = replicas('BENCH_WORKERS');
const BRIDGES = replicas('BENCH_BRIDGES');
const SCALED = WORKERS > 1 || BRIDGES > 1;

function replicas(name: string): number {
  const value = Number(process.env[name] ?? 1);
  if (!Number.isInteger(value) || value < 1 || value > 8) {
    console.error(`bench local-burst: ${name} must be a whole number from 1 to 8`);
    process.exit(2);
  }
  return value;
}

async function main(): Promise<void> {
  const stack = await startBenchStack({ 'local-platforms': 'linux/amd64' }, undefined, undefined, {
    workers: WORKERS,
    bridges: BRIDGES,
  });
  try {
    const created = new Map<string, number>();
    const secretAt = new Map<string, number>();
    const secretGoneAt = new Map<string, number>();
    const completedAt = new Map<string, number>();
    let allServed!: () => void;
    let allCleaned!: () => void;
    const served = new Promise<void>((r) => (allServed = r));
    const cleaned = new Promise<void>((r) => (allCleaned = r));
    const watch = watchTaskRunSecrets(stack.kc, stack.namespace, (type, name) => {
      if (type === 'ADDED' && !secretAt.has(name)) {
        secretAt.set(name, Date.now());
        if (secretAt.size === COUNT) allServed();
      } else if (type === 'DELETED') {
        secretGoneAt.set(name, Date.now());
        if (secretGoneAt.size === COUNT) allCleaned();
      }
    });
    await watch.ready;

    const limit = pLimit(CREATE_CONCURRENCY);
    const names = Array.from({ length: COUNT }, (_, i) => `burst-${i}`);
    const uids = new Map<string, string>();
    const processes = Object.fromEntries(
      [...stack.workers, ...stack.bridges].map((p) => [p.name, p.pid] as const),
    );
    const cpuAtStart = cpuByProcess(processes);
    const start = Date.now();
    await Promise.all(
      names.map((name) =>
        limit(async () => {
          created.set(name, Date.now());
          const tr = (await stack.custom.createNamespacedCustomObject({
            ...TASKRUN_API,
            namespace: stack.namespace,
            body: benchTaskRun(name, stack.namespace, 'linux/amd64'),
          })) as { metadata: { uid: string } };
          uids.set(name, tr.metadata.uid);
        }),
      ),
    );
    const createdBy = Date.now();
    await served;
    const end = Math.max(...secretAt.values());
    const cpuAtServed = cpuByProcess(processes);

    // Cleanup: complete every TaskRun and time until its Secret is gone.
    await Promise.all(
      names.map((name) =>
        limit(async () => {
          completedAt.set(name, Date.now());
          await completeTaskRun(stack.custom, stack.namespace, name);
        }),
      ),
    );
    await cleaned;
    watch.stop();
    const cpuAtCleaned = cpuByProcess(processes);

    const connection = await Connection.connect({ address: stack.temporal.address });
    const where = await historyStages(
      new Client({ connection, namespace: stack.temporal.namespace }),
      names.map((name) => ({
        workflowId: WORKFLOW_ID.taskRun(stack.namespace, name, uids.get(name)!),
        createdAt: created.get(name)!,
        secretSeenAt: secretAt.get(name)!,
      })),
    ).finally(() => connection.close());

    const latency = names.map((n) => secretAt.get(n)! - created.get(n)!);
    const createdPerSec = perSecond(COUNT, createdBy - start);
    const cleanup = names.map((n) => secretGoneAt.get(n)! - completedAt.get(n)!);
    console.log(
      JSON.stringify({
        bench: SCALED ? 'local-burst-scaled' : 'local-burst',
        ...(SCALED ? { workers: WORKERS, bridges: BRIDGES } : {}),
        taskRuns: COUNT,
        createdToSecretMs: summarize(latency),
        createdPerSec,
        throughputPerSec: perSecond(COUNT, end - start),
        completedToSecretDeletedMs: summarize(cleanup),
        ...where,
        cpuSeconds: {
          burst: cpuSpent(cpuAtStart, cpuAtServed),
          cleanup: cpuSpent(cpuAtServed, cpuAtCleaned),
        },
        peakRssMb: Object.fromEntries(
          Object.entries(processes).map(([name, pid]) => [name, peakRssMb(pid)]),
        ),
        // Issue 14's targets; served per second should keep up with createdPerSec.
        targets: {
          p50Ms: 250,
          p99Ms: 1000,
          cleanupP50Ms: 500,
          throughputPerSec: createdPerSec,
          workerRssMb: 200,
          bridgeRssMb: 100,
        },
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
