// Benchmark: does the worker's memory stay flat across a long run? BENCH_ROUNDS rounds (6) of
// BENCH_TASKRUNS local-platform TaskRuns (500): each round creates them, waits for every
// Secret, completes them and waits for every Secret to go, then deletes them. Prints one JSON
// line with the worker's and the bridge's RSS after each round. Flat means the last third's
// range is no higher than the middle third's: the workflow cache (HOSTFLOW_MAX_CACHED_WORKFLOWS)
// bounds what the worker keeps, and closed workflows leave it. The first third is the warm-up
// (the cache and V8's heap filling up to their plateau), which a leak test must not compare.
import pLimit from 'p-limit';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { startBenchStack } from './stack.js';
import { peakRssMb, rssMb, seconds } from './stats.js';
import { benchTaskRun, completeTaskRun } from './taskruns.js';
import { watchTaskRunSecrets } from './watch.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const COUNT = Number(process.env.BENCH_TASKRUNS ?? 500);
const CONCURRENCY = 32;

async function main(): Promise<void> {
  if (!Number.isInteger(ROUNDS) || ROUNDS < 2 || !Number.isInteger(COUNT) || COUNT < 1) {
    throw new Error('BENCH_ROUNDS must be a whole number ≥ 2 and BENCH_TASKRUNS ≥ 1');
  }
  const stack = await startBenchStack({ 'local-platforms': 'linux/amd64' });
  try {
    const { custom, namespace } = stack;
    const added = new Set<string>();
    const deleted = new Set<string>();
    let wake = () => undefined as void;
    const watch = watchTaskRunSecrets(stack.kc, namespace, (type, name) => {
      if (type === 'ADDED') added.add(name);
      else if (type === 'DELETED') deleted.add(name);
      wake();
    });
    await watch.ready;
    const until = (done: () => boolean) =>
      new Promise<void>((resolve) => {
        wake = () => (done() ? resolve() : undefined);
        wake();
      });
    const limit = pLimit(CONCURRENCY);
    const all = (names: string[], act: (name: string) => Promise<unknown>) =>
      Promise.all(names.map((name) => limit(() => act(name))));
    const rounds: Array<{ seconds: number; workerRssMb: number; bridgeRssMb: number }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = Date.now();
      const names = Array.from({ length: COUNT }, (_, i) => `soak-${round}-${i}`);
      await all(names, (name) =>
        custom.createNamespacedCustomObject({
          ...TASKRUN_API,
          namespace,
          body: benchTaskRun(name, namespace, 'linux/amd64'),
        }),
      );
      await until(() => names.every((name) => added.has(name)));
      await all(names, (name) => completeTaskRun(custom, namespace, name));
      await until(() => names.every((name) => deleted.has(name)));
      await all(names, (name) =>
        custom.deleteNamespacedCustomObject({ ...TASKRUN_API, namespace, name }),
      );
      rounds.push({
        seconds: seconds(Date.now() - started),
        workerRssMb: rssMb(stack.worker.pid),
        bridgeRssMb: rssMb(stack.bridge.pid),
      });
      console.error(`bench worker-soak: round ${round + 1}/${ROUNDS}`, rounds.at(-1));
    }
    watch.stop();
    // RSS after each round, as [lowest, highest] per third of the run: a leak lifts the last
    // third's range; V8's heap growing and collecting shows as a sawtooth within the same range.
    const worker = rounds.map((r) => r.workerRssMb);
    const range = (values: number[]) => [Math.min(...values), Math.max(...values)];
    const third = Math.floor(ROUNDS / 3);
    const [middle, last] = [
      range(worker.slice(third, ROUNDS - third)),
      range(worker.slice(ROUNDS - third)),
    ];
    console.log(
      JSON.stringify({
        bench: 'worker-soak',
        rounds: ROUNDS,
        taskRunsPerRound: COUNT,
        afterEachRound: rounds,
        workerRssMbRange: { warmUp: range(worker.slice(0, third)), middle, last },
        flat: last[1]! <= middle[1]!,
        peakRssMb: { worker: peakRssMb(stack.worker.pid), bridge: peakRssMb(stack.bridge.pid) },
        targets: { lastThirdMaxAtMostMiddleThirdMax: true, workerRssMb: 200 },
      }),
    );
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(`bench worker-soak: ${(err as Error).message}`);
  process.exit(1);
});
