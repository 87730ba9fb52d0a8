// `hostflow replay`: runs a workflow's history against this code, from a file or fetched from
// the Temporal server. On-call uses it to check a fix before resetting a workflow; CI uses it to
// catch non-deterministic changes.
import { WorkflowNotFoundError, isGrpcServiceError } from '@temporalio/client';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { WORKFLOW_BUNDLER_OPTIONS, WORKFLOWS_PATH } from '../workers/workflow-code.js';
import { UsageError, parseCommandArgs, runCommand, withTemporal } from './oncall.js';
import { waitingFor } from './progress.js';

export const REPLAY_USAGE = `
replay options:
  hostflow replay WORKFLOW-ID [--run-id RUN-ID]
      Fetches the history from the Temporal server in TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE
      (the latest run, or RUN-ID; a running workflow replays as far as it got).
  hostflow replay --workflow-id WORKFLOW-ID [HISTORY.json]
      HISTORY.json as written by \`temporal workflow show -w ID -o json\`; without it, as above.
      With --workflow-id a positional argument is always a file, without it always a workflow ID.
  hostflow replay --index INDEX.json
      Every history INDEX.json lists ({"HISTORY.json": "WORKFLOW-ID", ...}, files relative to
      it) in one replay worker: what CI runs on test/histories before a workflow change ships.
  Exits 0 when the history (every one) replays deterministically, 1 with the divergence otherwise.`;

const COMMAND = 'hostflow replay';
/** gRPC's NOT_FOUND: what fetching the history of an unknown workflow answers. */
const NOT_FOUND = 5;

export function replayCommand(args: string[]): Promise<number> {
  return runCommand(COMMAND, REPLAY_USAGE, async () => {
    const { values, positionals } = parseCommandArgs(args, {
      'workflow-id': { type: 'string' },
      'run-id': { type: 'string' },
      index: { type: 'string' },
    });
    const index = values.index;
    if (index !== undefined) {
      if (positionals.length || values['workflow-id'] || values['run-id']) {
        throw new UsageError('--index names every history to replay: give nothing else');
      }
      return runReplayIndex(index);
    }
    if (positionals.length > 1) {
      throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(' ')}`);
    }
    const flagged = values['workflow-id'];
    const workflowId = flagged ?? positionals[0];
    const file = flagged !== undefined ? positionals[0] : undefined;
    if (!workflowId) throw new UsageError('give the WORKFLOW-ID to replay');
    if (file !== undefined && values['run-id'] !== undefined) {
      throw new UsageError('--run-id picks a run on the server; a history file is one run already');
    }
    return runReplay(workflowId, file, values['run-id']);
  });
}

/** Where the replay worker finds the workflow code: a prebuilt bundle, or bundled now. */
function workflowCode() {
  return process.env.HOSTFLOW_WORKFLOW_BUNDLE
    ? { workflowBundle: { codePath: process.env.HOSTFLOW_WORKFLOW_BUNDLE } }
    : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: WORKFLOW_BUNDLER_OPTIONS };
}

export async function runReplay(
  workflowId: string,
  file: string | undefined,
  runId?: string,
): Promise<number> {
  const history = file ? parseHistoryFile(file) : await fetchHistory(workflowId, runId);
  const workflowBundle = workflowCode();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  try {
    await waitingFor(COMMAND, `${workflowId} to replay`, () =>
      Worker.runReplayHistory(workflowBundle, history, workflowId),
    );
  } catch (err) {
    console.error(`${COMMAND}: ${workflowId} does not replay: ${(err as Error).message}`);
    return 1;
  }
  console.log(`${COMMAND}: ${workflowId} replays deterministically`);
  return 0;
}

/**
 * Replays every history an index lists in one worker (bundled once), one line each; a history
 * that cannot be read is reported as not replaying, and the others still run.
 */
export async function runReplayIndex(indexFile: string): Promise<number> {
  const listed = parseIndex(indexFile);
  const dir = dirname(resolve(indexFile));
  // The worker replays one history at a time, and answers in the order they were given.
  const given: string[] = [];
  function* histories() {
    for (const [file, workflowId] of listed) {
      let history;
      try {
        history = historyFromJSON(parseHistoryFile(resolve(dir, file)));
      } catch (err) {
        console.error(`${COMMAND}: ${file} does not replay: ${(err as Error).message}`);
        continue;
      }
      given.push(file);
      yield { workflowId, history };
    }
  }
  Runtime.install({ logger: new DefaultLogger('WARN') });
  let ok = 0;
  await waitingFor(COMMAND, `${listed.length} histories to replay`, async () => {
    for await (const { workflowId, error } of Worker.runReplayHistories(
      workflowCode(),
      histories(),
    )) {
      const which = `${given.shift()} (${workflowId})`;
      if (error) {
        console.error(`${COMMAND}: ${which} does not replay: ${error.message}`);
      } else {
        ok++;
        console.log(`${COMMAND}: ${which} replays deterministically`);
      }
    }
  });
  console.log(`${COMMAND}: ${ok} of ${listed.length} histories replay deterministically`);
  return ok === listed.length ? 0 : 1;
}

/** An index's entries, [file, workflowId], or an error saying what is wrong with it. */
function parseIndex(indexFile: string): Array<[string, string]> {
  const parsed = readJson('index', indexFile);
  const entries =
    parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.entries(parsed) : [];
  const bad = entries.filter(([, id]) => typeof id !== 'string' || !id).map(([file]) => file);
  if (!entries.length || bad.length) {
    throw new UsageError(
      `index ${indexFile} must map each history file to its workflow ID, as ` +
        `{"HISTORY.json": "WORKFLOW-ID"}` +
        (bad.length ? `; these have no workflow ID: ${bad.join(', ')}` : ''),
    );
  }
  return entries as Array<[string, string]>;
}

const parseHistoryFile = (file: string): unknown => readJson('history', file);

/** A JSON file, or an error naming what it was to be and why it cannot be read. */
function readJson(what: string, file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${what} ${file}: ${(err as Error).message}`, { cause: err });
  }
}

async function fetchHistory(workflowId: string, runId: string | undefined) {
  return withTemporal(COMMAND, async ({ client, settings }) => {
    try {
      return await waitingFor(COMMAND, `the history of ${workflowId}`, () =>
        client.workflow.getHandle(workflowId, runId).fetchHistory(),
      );
    } catch (err) {
      const missing =
        err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === NOT_FOUND);
      if (!missing) throw err;
      throw new Error(
        `there is no workflow ${workflowId}${runId ? ` with run ${runId}` : ''} in Temporal ` +
          `namespace ${settings.TEMPORAL_NAMESPACE}`,
        { cause: err },
      );
    }
  });
}
