// Bundles the workflow code once, ahead of time (the container image does this at build time):
// a worker given HOSTFLOW_WORKFLOW_BUNDLE starts in about a second instead of running webpack.
// Usage: node dist/workers/bundle-workflows.js <output.js>
import { bundleWorkflowCode, type Logger } from '@temporalio/worker';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WORKFLOW_BUNDLER_OPTIONS, WORKFLOWS_PATH } from './workflow-code.js';

export async function bundleWorkflows(logger?: Logger): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    ...WORKFLOW_BUNDLER_OPTIONS,
    logger,
  });
  return code;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const output = process.argv[2];
  if (!output || process.argv.length > 3) {
    console.error('usage: node dist/workers/bundle-workflows.js <output.js>');
    process.exit(2);
  }
  bundleWorkflows().then(
    (code) => {
      writeFileSync(output, code);
      console.log(`workflow bundle written to ${output} (${Math.round(code.length / 1024)} KiB)`);
    },
    (err: Error) => {
      console.error(`bundle-workflows: ${err.message}`);
      process.exit(1);
    },
  );
}
