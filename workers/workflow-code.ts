// Where the workflow code is and how it is bundled, for the worker, the bundle built ahead of
// time and the replayer alike; and, for an install that runs some families only
// (HOSTFLOW_FAMILIES), an entry module that exports their workflows and no others.
import type { WorkerOptions } from '@temporalio/worker';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runsEvery, type Family } from '../shared/families.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.js', import.meta.url));

/**
 * The workflow modules are evaluated once per workflow thread and shared by every workflow, not
 * once for each new workflow as the SDK does by default: in the local burst that is about 8 % of
 * the worker's CPU and 85 MB at its peak, since every cached workflow held a copy of each module.
 * Safe because the modules keep no mutable state at module scope, which a lint rule enforces
 * (docs/architecture.md, "Shared workflow modules").
 */
export const WORKFLOW_BUNDLER_OPTIONS = {
  preloadModules: [WORKFLOWS_PATH],
} satisfies WorkerOptions['bundlerOptions'];

/**
 * Each family's workflow types, as workflows/index.ts exports them. A type two families run (an
 * allocator serves builds and static Machines alike) is listed under both.
 * test/families-workflows.test.ts checks these cover every export of workflows/index.ts.
 */
export const FAMILY_WORKFLOWS: Record<Family, string[]> = {
  taskruns: [
    'taskRunWorkflow',
    'allocatorWorkflow',
    'hostConfigWorkflow',
    'cloudGcWorkflow',
    'taskRunLeftoversGcWorkflow',
  ],
  provisionings: ['provisioningWorkflow', 'softwareWorkflow', 'bpaClusterWorkflow'],
  'cluster-operations': ['clusterOperationLifecycleWorkflow'],
  machines: [
    'hostflowMachineWorkflow',
    'allocatorWorkflow',
    'hostConfigWorkflow',
    'cloudGcWorkflow',
  ],
  rollouts: ['rolloutWorkflow', 'nodeUpdateWorkflow'],
  // Locks are enforced by the API server; workflows of the other families take them.
  locks: [],
};

/** The workflow types `families` run, each once. */
export const familyWorkflowTypes = (families: readonly Family[]): string[] => [
  ...new Set(families.flatMap((family) => FAMILY_WORKFLOWS[family])),
];

/**
 * The worker's workflow code: every family's (the bundle built ahead of time, when given), or for
 * some families an entry module written to a temporary folder that re-exports only their types
 * from workflows/index.ts, bundled as the worker starts: a type of another family is then not
 * registered, and a workflow of it that reaches the queue fails its task saying so instead of
 * running.
 */
export function workflowCodeFor(
  families: readonly Family[],
  prebuiltBundle: string | undefined,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'bundlerOptions'> {
  if (runsEvery(families)) {
    return prebuiltBundle
      ? { workflowBundle: { codePath: prebuiltBundle } }
      : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: WORKFLOW_BUNDLER_OPTIONS };
  }
  const types = familyWorkflowTypes(families).join(', ');
  const entry = join(mkdtempSync(join(tmpdir(), 'hostflow-workflows-')), 'index.js');
  writeFileSync(
    entry,
    `// The workflows of ${families.join(', ')}.\n` +
      `export { ${types} } from ${JSON.stringify(pathToFileURL(WORKFLOWS_PATH).href)};\n`,
  );
  // The SDK's own modules are imported from beside the entry: found in the engine's node_modules.
  const nodeModules = join(
    dirname(createRequire(import.meta.url).resolve('@temporalio/workflow/package.json')),
    '../..',
  );
  return {
    workflowsPath: entry,
    bundlerOptions: {
      preloadModules: [entry],
      webpackConfigHook: (config) => ({
        ...config,
        resolve: { ...config.resolve, modules: [...(config.resolve?.modules ?? []), nodeModules] },
      }),
    },
  };
}
