// Where the workflow code is and how it is bundled, for the worker, the bundle built ahead of
// time and the replayer alike.
import type { WorkerOptions } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';

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
