// Runs hostflow's own processes (worker, bridge) exactly as deployed: `node dist/workers/*.js`
// with settings in the environment. Each test file gets its own scope (TaskRun namespace,
// engine namespace, task queue) so files can run in parallel on the shared components.
import { join } from 'node:path';
import { REPO_ROOT } from '../../local-stack/paths.js';
import { spawnManaged, waitFor, type ManagedProcess } from '../../local-stack/process.js';
import { testEnv } from './env.js';

export interface EngineScope {
  /** Where the test's TaskRuns live; the bridge watches only this namespace. */
  namespace: string;
  /** Where host-config and host secrets live. */
  engineNamespace: string;
  taskQueue: string;
}

export interface EngineProcess extends ManagedProcess {
  /** SIGKILL, no clean shutdown: a crash. */
  kill(): Promise<void>;
}

function start(
  kind: 'worker' | 'bridge',
  scope: EngineScope,
  extraEnv: NodeJS.ProcessEnv = {},
): EngineProcess {
  const proc = spawnManaged(
    `${kind} (${scope.namespace})`,
    process.execPath,
    ['--enable-source-maps', join(REPO_ROOT, `dist/workers/${kind}.js`)],
    {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: testEnv('temporalAddress'),
        TEMPORAL_NAMESPACE: testEnv('temporalNamespace'),
        KUBECONFIG: testEnv('kubeconfig'),
        HOSTFLOW_NAMESPACE: scope.engineNamespace,
        HOSTFLOW_TASK_QUEUE: scope.taskQueue,
        HOSTFLOW_WATCH_NAMESPACE: scope.namespace,
        HOSTFLOW_WORKFLOW_BUNDLE: testEnv('workflowBundle'),
        ...extraEnv,
      },
      logFile: join(testEnv('stateDir'), 'logs', `${kind}-${scope.namespace}.log`),
    },
  );
  return {
    ...proc,
    name: proc.name,
    get pid() {
      return proc.pid;
    },
    async kill() {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await proc.exited;
    },
  };
}

export async function startWorker(
  scope: EngineScope,
  env?: NodeJS.ProcessEnv,
): Promise<EngineProcess> {
  const worker = start('worker', scope, env);
  await waitFor(
    `${worker.name} to poll`,
    () => (worker.tail(50).includes('polling') ? true : undefined),
    {
      process: worker,
    },
  );
  return worker;
}

export async function startBridge(
  scope: EngineScope,
  env?: NodeJS.ProcessEnv,
): Promise<EngineProcess> {
  const bridge = start('bridge', scope, env);
  await waitFor(
    `${bridge.name} to watch`,
    () => (bridge.tail(50).includes('watching') ? true : undefined),
    {
      process: bridge,
    },
  );
  return bridge;
}
