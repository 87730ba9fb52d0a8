// Benchmark: dynamic AWS TaskRuns against moto, whose instances become sshd hosts after a boot
// delay. Prints one JSON line with the engine's own overhead: "instance reachable → Secret
// present" and "TaskRun completed → TerminateInstances called" (p50/p99). Targets: ≤ 1.5 s at
// p50, and terminate issued ≤ 2 s after completion. The original added up to a 60 s poll here.
import pLimit from 'p-limit';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { ANNOTATIONS } from '../platform-config/contract.js';
import { startBenchStack } from './stack.js';
import { peakRssMb, perSecond, summarize } from './stats.js';
import { benchTaskRun, completeTaskRun } from './taskruns.js';
import { watchTaskRunSecrets } from './watch.js';

const COUNT = Number(process.env.BENCH_TASKRUNS ?? 20);
const MAX_INSTANCES = Number(process.env.BENCH_MAX_INSTANCES ?? 10);
const BOOT_DELAY_MS = Number(process.env.BENCH_BOOT_DELAY_MS ?? 2000);
const PLATFORM = 'linux/bench-vm';

async function main(): Promise<void> {
  const readyAt = new Map<string, number>();
  const terminateAt = new Map<string, number>();
  const stack = await startBenchStack({}, undefined, {
    platform: PLATFORM,
    maxInstances: MAX_INSTANCES,
    bootDelayMs: BOOT_DELAY_MS,
    onHostReady: (id, at) => readyAt.set(id, at),
    onProxiedCall: (params, at) => {
      if (params.get('Action') !== 'TerminateInstances') return;
      for (const [key, id] of params)
        if (key.startsWith('InstanceId.') && !terminateAt.has(id)) terminateAt.set(id, at);
    },
  });
  try {
    const created = new Map<string, number>();
    const secretAt = new Map<string, number>();
    const goneAt = new Map<string, number>();
    const completedAt = new Map<string, number>();
    const instanceOf = new Map<string, string>();
    const limit = pLimit(8);
    let allDone!: () => void;
    const done = new Promise<void>((r) => (allDone = r));

    // Each build "runs" only until its Secret appears: then it completes and its VM goes.
    const finish = async (name: string): Promise<void> => {
      const tr = (await stack.custom.getNamespacedCustomObject({
        ...TASKRUN_API,
        namespace: stack.namespace,
        name,
      })) as {
        metadata: { annotations?: Record<string, string> };
      };
      const id = tr.metadata.annotations?.[ANNOTATIONS.cloudInstanceId];
      if (id) instanceOf.set(name, id);
      completedAt.set(name, performance.now());
      await completeTaskRun(stack.custom, stack.namespace, name);
    };
    const watch = watchTaskRunSecrets(stack.kc, stack.namespace, (type, name) => {
      if (!created.has(name)) return;
      if (type === 'ADDED' && !secretAt.has(name)) {
        secretAt.set(name, performance.now());
        void limit(() => finish(name));
      } else if (type === 'DELETED') {
        goneAt.set(name, performance.now());
        if (goneAt.size === COUNT) allDone();
      }
    });
    await watch.ready;
    const names = Array.from({ length: COUNT }, (_, i) => `vm-${i}`);
    const start = performance.now();
    await Promise.all(
      names.map((name) =>
        limit(async () => {
          created.set(name, performance.now());
          await stack.custom.createNamespacedCustomObject({
            ...TASKRUN_API,
            namespace: stack.namespace,
            body: benchTaskRun(name, stack.namespace, PLATFORM),
          });
        }),
      ),
    );
    await done;
    watch.stop();
    const end = performance.now();

    const overhead = names.flatMap((n) => {
      const ready = readyAt.get(instanceOf.get(n) ?? '');
      return ready === undefined ? [] : [secretAt.get(n)! - ready];
    });
    const terminate = names.flatMap((n) => {
      const at = terminateAt.get(instanceOf.get(n) ?? '');
      return at === undefined ? [] : [at - completedAt.get(n)!];
    });
    console.log(
      JSON.stringify({
        bench: 'dynamic-burst',
        taskRuns: COUNT,
        maxInstances: MAX_INSTANCES,
        bootDelayMs: BOOT_DELAY_MS,
        reachableToSecretMs: summarize(overhead),
        completedToTerminateCalledMs: summarize(terminate),
        createdToSecretMs: summarize(names.map((n) => secretAt.get(n)! - created.get(n)!)),
        throughputPerSec: perSecond(COUNT, end - start),
        measured: { reachable: overhead.length, terminated: terminate.length },
        peakRssMb: { worker: peakRssMb(stack.worker.pid), bridge: peakRssMb(stack.bridge.pid) },
        targets: { reachableToSecretP50Ms: 1500, completedToTerminateMs: 2000 },
      }),
    );
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(`bench dynamic-burst: ${(err as Error).message}`);
  process.exit(1);
});
