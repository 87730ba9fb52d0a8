// Each test file runs its own worker and bridge processes in its own scope (TaskRun
// namespace, engine namespace, task queue), so files run in parallel on the shared components.
import { join } from 'node:path';
import {
  startEngineProcess,
  type EngineKind,
  type EngineProcess,
} from '../../local-stack/engine.js';
import { testEnv } from './env.js';

export type { EngineProcess };

export interface EngineScope {
  /** Where the test's TaskRuns live; the bridge watches only this namespace. */
  namespace: string;
  /** Where host-config and host secrets live. */
  engineNamespace: string;
  taskQueue: string;
}

export function engineEnv(scope: EngineScope): NodeJS.ProcessEnv {
  return {
    TEMPORAL_ADDRESS: testEnv('temporalAddress'),
    TEMPORAL_NAMESPACE: testEnv('temporalNamespace'),
    KUBECONFIG: testEnv('kubeconfig'),
    HOSTFLOW_NAMESPACE: scope.engineNamespace,
    HOSTFLOW_TASK_QUEUE: scope.taskQueue,
    HOSTFLOW_WATCH_NAMESPACE: scope.namespace,
    HOSTFLOW_WORKFLOW_BUNDLE: testEnv('workflowBundle'),
  };
}

function start(
  kind: EngineKind,
  scope: EngineScope,
  extraEnv: NodeJS.ProcessEnv = {},
  label?: string,
): Promise<EngineProcess> {
  const id = label ? `${scope.namespace}-${label}` : scope.namespace;
  return startEngineProcess(
    kind,
    { ...engineEnv(scope), ...extraEnv },
    { name: `${kind} (${id})`, logFile: join(testEnv('stateDir'), 'logs', `${kind}-${id}.log`) },
  );
}

/** `label` tells a second worker of the scope apart (its name and log file). */
export const startWorker = (
  scope: EngineScope,
  env?: NodeJS.ProcessEnv,
  { label }: { label?: string } = {},
) => start('worker', scope, env, label);
export const startBridge = (scope: EngineScope, env?: NodeJS.ProcessEnv) =>
  start('bridge', scope, env);

/** The lines of a process's log that say the API server refused it something. */
export function refusedCalls(log: string): string[] {
  return log.split('\n').filter((line) => /forbidden/i.test(line));
}

/**
 * A test file's teardown: the engine's processes first, together (they act on the rest), then
 * what they used, in the order given. Any may be unset, when beforeAll failed part way.
 */
export async function tearDown(
  engine: Array<{ stop(): Promise<unknown> } | undefined>,
  ...used: Array<{ dispose(): Promise<unknown> } | undefined>
): Promise<void> {
  await Promise.all(engine.map((process) => process?.stop()));
  for (const resource of used) await resource?.dispose();
}
