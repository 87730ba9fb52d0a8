// A bare SDK worker for bench/temporal-floor.ts, set up as hostflow's worker is (its Node flags,
// environment, workflow cache, and a workflow bundle built ahead) but running only the minimal
// workflow. It prints when each workflow was served and when it ended, one line each.
import { NativeConnection, Worker, type InjectedSinks } from '@temporalio/worker';
import { loadSettings } from '../../runtime/settings.js';
import { formatFloorLine } from './lines.js';
import type { FloorSinks } from './workflow.js';

async function main(): Promise<void> {
  const settings = loadSettings();
  const codePath = process.env.FLOOR_WORKFLOW_BUNDLE;
  if (!codePath) throw new Error('FLOOR_WORKFLOW_BUNDLE must name the workflow bundle');
  const report =
    (step: 'served' | 'ended') =>
    ({ workflowId }: { workflowId: string }) => {
      process.stdout.write(formatFloorLine({ kind: step, workflowId, at: Date.now() }));
    };
  const sinks: InjectedSinks<FloorSinks> = {
    bench: {
      served: { fn: report('served'), callDuringReplay: false },
      ended: { fn: report('ended'), callDuringReplay: false },
    },
  };
  const connection = await NativeConnection.connect({ address: settings.TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.HOSTFLOW_TASK_QUEUE,
    maxCachedWorkflows: settings.HOSTFLOW_MAX_CACHED_WORKFLOWS,
    workflowBundle: { codePath },
    sinks,
  });
  process.stdout.write(formatFloorLine({ kind: 'ready' }));
  await worker.run(); // until SIGTERM
  await connection.close();
}

main().catch((err: Error) => {
  console.error(`floor worker: ${err.message}`);
  process.exit(1);
});
