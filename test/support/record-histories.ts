// Writes every workflow run's history of a Temporal server into a folder (`temporal workflow show
// -o json`), with an index of file → workflow id: how test/histories/ is recorded
// (HOSTFLOW_RECORD_HISTORIES).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { temporalCli } from '../../local-stack/temporal.js';

const run = promisify(execFile);

export async function recordHistories(dir: string, temporalAddress: string): Promise<void> {
  const address = ['--address', temporalAddress];
  const cli = async (args: string[]) =>
    JSON.parse(
      (await run(temporalCli(), [...args, '-o', 'json', ...address], { maxBuffer: 1 << 28 }))
        .stdout,
    ) as unknown;
  // Every namespace's: test files that run an engine of their own (a second cluster) use one.
  const namespaces = (
    (await cli(['operator', 'namespace', 'list'])) as Array<{ namespaceInfo: { name: string } }>
  )
    .map((n) => n.namespaceInfo.name)
    .filter((name) => name !== 'temporal-system');
  mkdirSync(dir, { recursive: true });
  const index: Record<string, string> = {};
  for (const namespace of namespaces) {
    const runs = (
      (await cli(['workflow', 'list', '-n', namespace])) as Array<{
        execution: { workflowId: string; runId: string };
      }>
    ).map((w) => w.execution);
    for (const { workflowId, runId } of runs) {
      const shown = await run(
        temporalCli(),
        [
          'workflow',
          'show',
          '-n',
          namespace,
          '-w',
          workflowId,
          '-r',
          runId,
          '-o',
          'json',
          ...address,
        ],
        { maxBuffer: 1 << 28 },
      );
      const file = `${workflowId.replace(/[^A-Za-z0-9.-]+/g, '_').slice(0, 150)}_${runId}.json`;
      writeFileSync(join(dir, file), shown.stdout);
      index[file] = workflowId;
    }
  }
  // Several servers (a test file may run its own) record into one folder: one index of all.
  const indexFile = join(dir, 'index.json');
  const earlier = existsSync(indexFile)
    ? (JSON.parse(readFileSync(indexFile, 'utf8')) as Record<string, string>)
    : {};
  writeFileSync(indexFile, JSON.stringify({ ...earlier, ...index }, null, 2));
  console.log(`recorded ${Object.keys(index).length} workflow histories in ${dir}`);
}

/** For a test file with a Temporal of its own: records it too, when HOSTFLOW_RECORD_HISTORIES asks. */
export async function recordIfAsked(temporalAddress: string): Promise<void> {
  const dir = process.env.HOSTFLOW_RECORD_HISTORIES;
  if (!dir) return;
  await recordHistories(dir, temporalAddress).catch((err: unknown) =>
    console.error(`recording: ${String(err)}`),
  );
}
