// Every benchmark in turn, each on a stack of its own: prints the one JSON line each bench
// prints (its figures beside its targets), or {"bench", "error"} for one that failed, and exits
// non-zero if any failed. BENCH_ONLY=local-burst,static-burst runs a subset. With the original
// built (HOSTFLOW_PEER_DIR, HOSTFLOW_PEER_HARNESS: see bench/peer.ts) it runs `peer` too. Then,
// from what ran, one line of hostflow's figures as ratios of the floor's measured in the same run.
import { fileURLToPath } from 'node:url';
import { runForReport } from './child-report.js';

interface Bench {
  name: string;
  /** The script under bench/, when not `name`: a variant of another bench. */
  script?: string;
  env?: Record<string, string>;
}

const BENCHES: readonly Bench[] = [
  { name: 'local-burst' },
  {
    name: 'local-burst-scaled',
    script: 'local-burst',
    env: { BENCH_WORKERS: '2', BENCH_BRIDGES: '2' },
  },
  { name: 'temporal-floor' },
  { name: 'static-burst' },
  { name: 'allocator-grants' },
  { name: 'dynamic-burst' },
  { name: 'bridge-scale' },
  { name: 'worker-soak' },
  { name: 'chaos' },
  ...(process.env.HOSTFLOW_PEER_DIR && process.env.HOSTFLOW_PEER_HARNESS ? [{ name: 'peer' }] : []),
];

/** The local path against the floor (docs/performance.md): at most these multiples, or MB over. */
const FLOOR_TARGETS = {
  workerCpuAtMost: 1.5,
  temporalCpuAtMost: 1.2,
  workerPeakRssMbOverAtMost: 50,
};

interface LocalBurstLine {
  taskRuns: number;
  cpuSeconds: { burst: Record<string, number>; cleanup: Record<string, number> };
  peakRssMb: Record<string, number>;
}
interface FloorLine {
  cpuMsPerWorkflow: { worker: number; temporal: number };
  workerRssMb: { peak: number };
}

/** CPU ms a TaskRun of the processes whose name starts with `prefix` (`worker`, `temporal`). */
function cpuMsPerTaskRun(line: LocalBurstLine, prefix: string): number {
  const seconds = [line.cpuSeconds.burst, line.cpuSeconds.cleanup]
    .flatMap((byProcess) => Object.entries(byProcess))
    .filter(([name]) => name.startsWith(prefix))
    .reduce((total, [, value]) => total + value, 0);
  return Math.round((seconds * 1000) / line.taskRuns);
}

function againstFloor(local: LocalBurstLine, floor: FloorLine) {
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const worker = cpuMsPerTaskRun(local, 'worker');
  const temporal = cpuMsPerTaskRun(local, 'temporal');
  const workerPeak = Math.max(
    ...Object.entries(local.peakRssMb)
      .filter(([name]) => name.startsWith('worker'))
      .map(([, mb]) => mb),
  );
  const figures = {
    workerCpu: ratio(worker, floor.cpuMsPerWorkflow.worker),
    temporalCpu: ratio(temporal, floor.cpuMsPerWorkflow.temporal),
    workerPeakRssMbOver: workerPeak - floor.workerRssMb.peak,
  };
  return {
    bench: 'against-floor',
    cpuMsPerTaskRun: {
      worker,
      temporal,
      floorWorker: floor.cpuMsPerWorkflow.worker,
      floorTemporal: floor.cpuMsPerWorkflow.temporal,
    },
    figures,
    targets: FLOOR_TARGETS,
    met: {
      workerCpu: figures.workerCpu <= FLOOR_TARGETS.workerCpuAtMost,
      temporalCpu: figures.temporalCpu <= FLOOR_TARGETS.temporalCpuAtMost,
      workerPeakRss: figures.workerPeakRssMbOver <= FLOOR_TARGETS.workerPeakRssMbOverAtMost,
    },
  };
}
const NAMES = BENCHES.map((b) => b.name);

async function runBench({ name, script, env }: Bench): Promise<{ line?: string; error?: string }> {
  const path = fileURLToPath(new URL(`./${script ?? name}.js`, import.meta.url));
  const { line, code, lastError } = await runForReport(['--enable-source-maps', path], env ?? {});
  return line ? { line } : { error: lastError || `exited with code ${code}` };
}

async function main(): Promise<number> {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  const unknown = only?.filter((name) => !NAMES.includes(name)) ?? [];
  if (unknown.length > 0) {
    console.error(
      `bench all: unknown bench ${unknown.join(', ')}; the benches are ${NAMES.join(', ')}`,
    );
    return 2;
  }
  let failed = 0;
  const lines = new Map<string, string>();
  for (const bench of BENCHES.filter((b) => !only || only.includes(b.name))) {
    console.error(`bench all: running ${bench.name}`);
    const { line, error } = await runBench(bench);
    if (line) {
      console.log(line);
      lines.set(bench.name, line);
    } else {
      failed++;
      console.log(JSON.stringify({ bench: bench.name, error }));
    }
  }
  const local = lines.get('local-burst');
  const floor = lines.get('temporal-floor');
  if (local && floor) {
    console.log(JSON.stringify(againstFloor(JSON.parse(local), JSON.parse(floor))));
  }
  return failed > 0 ? 1 : 0;
}

main().then((code) => process.exit(code));
