// `hostflow replay`: runs a recorded workflow history against this code. On-call uses it to
// check a fix before resetting a workflow; CI uses it to catch non-deterministic changes.
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { WORKFLOWS_PATH } from '../workers/worker.js';
import { loadSettings, temporalConnection } from '../workers/settings.js';

export const REPLAY_USAGE = `
replay options:
  hostflow replay --workflow-id ID [HISTORY.json]
      HISTORY.json as written by \`temporal workflow show -w ID -o json\`; without it, the
      history is fetched from the Temporal server in TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE.
      Exits 0 when the history replays deterministically, 1 with the divergence otherwise.`;

export async function runReplay(workflowId: string, file: string | undefined): Promise<number> {
  const history = file ? parseHistoryFile(file) : await fetchHistory(workflowId);
  const workflowBundle = process.env.HOSTFLOW_WORKFLOW_BUNDLE
    ? { workflowBundle: { codePath: process.env.HOSTFLOW_WORKFLOW_BUNDLE } }
    : { workflowsPath: WORKFLOWS_PATH };
  Runtime.install({ logger: new DefaultLogger('WARN') });
  try {
    await Worker.runReplayHistory(workflowBundle, history, workflowId);
  } catch (err) {
    console.error(`hostflow replay: ${workflowId} does not replay: ${(err as Error).message}`);
    return 1;
  }
  console.log(`hostflow replay: ${workflowId} replays deterministically`);
  return 0;
}

function parseHistoryFile(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read history ${file}: ${(err as Error).message}`, { cause: err });
  }
}

async function fetchHistory(workflowId: string) {
  const settings = loadSettings();
  const connection = await Connection.connect(temporalConnection(settings));
  try {
    const client = new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE });
    return await client.workflow.getHandle(workflowId).fetchHistory();
  } finally {
    await connection.close();
  }
}
