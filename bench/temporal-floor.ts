// Benchmark: the floor under the local burst's targets on this machine. The same burst of 500
// (32 starts in flight, at about the rate the local burst creates its TaskRuns), but each TaskRun
// is the least workflow it can be (floor/workflow.ts: started with a signal, served in its first
// workflow task, ended by a signal in its second) on a bare SDK worker set up as hostflow's
// (floor/worker.ts), with no Kubernetes, bridge or activity. Whatever hostflow does costs more
// than this, so a target this misses cannot be met here by a workflow per TaskRun (docs/architecture.md,
// "A workflow per object"). Prints one JSON line: start → served and signal → ended (p50/p90/p99), served per
// second against started per second, the CPU each process spent and the worker's RSS, idle and
// at its peak.
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pLimit from 'p-limit';
import { ENGINE_ENV, ENGINE_NODE_FLAGS } from '../local-stack/defaults.js';
import { spawnManaged, waitFor } from '../local-stack/process.js';
import { startBenchTemporal } from './temporal.js';
import { cpuByProcess, cpuSpent } from './cpu.js';
import { parseFloorLine } from './floor/lines.js';
import { observed } from './floor/workflow.js';
import { peakRssMb, perSecond, rssMb, summarize } from './stats.js';

const COUNT = Number(process.env.BENCH_TASKRUNS ?? 500);
const START_CONCURRENCY = 32; // as the local burst creates its TaskRuns
/**
 * Starts per second: the local burst's creation rate, which its served rate is held to. Its
 * TaskRun creates run at 93–157 a second on this machine, depending on the day.
 */
const START_RATE = Number(process.env.BENCH_START_RATE ?? 150);
const TASK_QUEUE = 'floor';

async function main(): Promise<void> {
  if (!(START_RATE > 0) || !Number.isInteger(COUNT) || COUNT < 1) {
    console.error(
      'bench temporal-floor: BENCH_START_RATE must be a positive number and BENCH_TASKRUNS a positive whole number',
    );
    process.exit(2);
  }
  const dir = mkdtempSync(join(tmpdir(), 'hostflow-floor-'));
  const temporal = await startBenchTemporal();
  try {
    const bundle = join(dir, 'floor-workflow-bundle.js');
    const workflowsPath = fileURLToPath(new URL('./floor/workflow.js', import.meta.url));
    writeFileSync(
      bundle,
      (await bundleWorkflowCode({ workflowsPath, preloadModules: [workflowsPath] })).code,
    );

    const served = new Map<string, number>();
    const ended = new Map<string, number>();
    let ready = false;
    let allServed!: () => void;
    let allEnded!: () => void;
    const servedAll = new Promise<void>((r) => (allServed = r));
    const endedAll = new Promise<void>((r) => (allEnded = r));
    const worker = spawnManaged(
      'floor worker',
      process.execPath,
      [...ENGINE_NODE_FLAGS.worker, fileURLToPath(new URL('./floor/worker.js', import.meta.url))],
      {
        env: {
          ...process.env,
          ...ENGINE_ENV.worker,
          TEMPORAL_ADDRESS: temporal.address,
          TEMPORAL_NAMESPACE: temporal.namespace,
          HOSTFLOW_TASK_QUEUE: TASK_QUEUE,
          FLOOR_WORKFLOW_BUNDLE: bundle,
        },
        echo: (text) => {
          const line = parseFloorLine(text);
          if (line?.kind === 'ready') ready = true;
          else if (line?.kind === 'served') {
            served.set(line.workflowId, line.at);
            if (served.size === COUNT) allServed();
          } else if (line?.kind === 'ended') {
            ended.set(line.workflowId, line.at);
            if (ended.size === COUNT) allEnded();
          }
        },
      },
    );
    // A worker that dies mid-burst fails the bench rather than leaving it waiting; its exit when
    // the bench stops it is no news.
    const crashed = new Promise<never>((_, reject) => {
      void worker.exited.then((code) =>
        reject(new Error(`the floor worker exited (code ${code}): ${worker.tail(5)}`)),
      );
    });
    crashed.catch(() => undefined);
    const untilWorkerDone = (done: Promise<void>) => Promise.race([done, crashed]);
    try {
      await waitFor('the floor worker to poll', () => (ready ? true : undefined), {
        timeoutMs: 60_000,
        process: worker,
      });
      const connection = await Connection.connect({ address: temporal.address });
      const client = new Client({ connection, namespace: temporal.namespace });
      const processes = { worker: worker.pid };
      const workerIdleRssMb = rssMb(worker.pid);
      const ids = Array.from({ length: COUNT }, (_, i) => `floor-${i}`);
      const startedAt = new Map<string, number>();
      const completedAt = new Map<string, number>();

      const cpuAtStart = cpuByProcess(processes);
      const start = Date.now();
      await paced(ids, async (workflowId) => {
        startedAt.set(workflowId, Date.now());
        await client.workflow.signalWithStart('floorWorkflow', {
          workflowId,
          taskQueue: TASK_QUEUE,
          signal: observed,
          signalArgs: [{ state: 'active' }],
        });
      });
      const startedBy = Date.now();
      await untilWorkerDone(servedAll);
      const cpuAtServed = cpuByProcess(processes);

      await paced(ids, async (workflowId) => {
        completedAt.set(workflowId, Date.now());
        await client.workflow.getHandle(workflowId).signal(observed, { state: 'completed' });
      });
      await untilWorkerDone(endedAll);
      const cpuAtEnded = cpuByProcess(processes);
      await connection.close();

      const startedPerSec = perSecond(COUNT, startedBy - start);
      const burst = cpuSpent(cpuAtStart, cpuAtServed);
      const cleanup = cpuSpent(cpuAtServed, cpuAtEnded);
      const perWorkflowMs = (names: string[]) =>
        Math.round(
          (names.reduce((sum, name) => sum + (burst[name] ?? 0) + (cleanup[name] ?? 0), 0) * 1000) /
            COUNT,
        );
      // Temporal is the dev server's one process, or the server's services and PostgreSQL.
      const temporalProcesses = [
        ...new Set([...Object.keys(burst), ...Object.keys(cleanup)]),
      ].filter((name) => name !== 'worker' && name !== 'bench');
      console.log(
        JSON.stringify({
          bench: 'temporal-floor',
          temporal: temporal.kind,
          workflows: COUNT,
          startToServedMs: summarize(ids.map((id) => served.get(id)! - startedAt.get(id)!)),
          startedPerSec,
          servedPerSec: perSecond(COUNT, Math.max(...served.values()) - start),
          signalToEndedMs: summarize(ids.map((id) => ended.get(id)! - completedAt.get(id)!)),
          cpuSeconds: { burst, cleanup },
          cpuMsPerWorkflow: {
            temporal: perWorkflowMs(temporalProcesses),
            worker: perWorkflowMs(['worker']),
          },
          workerRssMb: { idle: workerIdleRssMb, peak: peakRssMb(worker.pid) },
          // The local burst's targets (issue 14), which this floor bounds from below.
          targets: {
            p50Ms: 250,
            p99Ms: 1000,
            cleanupP50Ms: 500,
            throughputPerSec: startedPerSec,
            workerRssMb: 200,
          },
        }),
      );
    } finally {
      await worker.stop();
    }
  } finally {
    await temporal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `send` for each id at START_RATE a second, at most START_CONCURRENCY in flight. */
async function paced(ids: string[], send: (id: string) => Promise<void>): Promise<void> {
  const limit = pLimit(START_CONCURRENCY);
  const from = Date.now();
  await Promise.all(
    ids.map((id, index) =>
      limit(async () => {
        await new Promise((r) => setTimeout(r, from + (index * 1000) / START_RATE - Date.now()));
        await send(id);
      }),
    ),
  );
}

main().catch((err) => {
  console.error(`bench temporal-floor: ${(err as Error).message}`);
  process.exit(1);
});
