// Stops what global-setup started and removes its state directory. With
// HOSTFLOW_RECORD_HISTORIES set to a directory, it first writes every workflow run's history
// there (`temporal workflow show -o json`), which is how test/histories/ is recorded.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { temporalCli } from '../../local-stack/temporal.js';
import { TEST_ENV } from './env.js';

const run = promisify(execFile);

export default async function globalTeardown(): Promise<void> {
  const record = process.env.HOSTFLOW_RECORD_HISTORIES;
  if (record) await recordHistories(record).catch((err) => console.error(`recording: ${err}`));
  const components = globalThis.__hostflowComponents ?? [];
  // Last started, first stopped: the local node before the API server it serves. The node's
  // stop checks the machine is as it found it (no process, mount, cgroup, iptables chain,
  // link, changed sysctl or path left); what it left fails the run.
  const problems: string[] = [];
  for (const component of [...components].reverse()) {
    await component.stop().catch((err: unknown) => problems.push(String(err)));
  }
  const dir = globalThis.__hostflowStateDir;
  if (dir && !process.env.HOSTFLOW_KEEP_TEST_STATE) rmSync(dir, { recursive: true, force: true });
  if (problems.length) throw new Error(`stopping the shared components: ${problems.join('\n')}`);
}

async function recordHistories(dir: string): Promise<void> {
  const address = ['--address', process.env[TEST_ENV.temporalAddress]!];
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
  writeFileSync(join(dir, 'index.json'), JSON.stringify(index, null, 2));
  console.log(`recorded ${Object.keys(index).length} workflow histories in ${dir}`);
}
