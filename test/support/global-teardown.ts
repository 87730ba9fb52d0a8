// Stops what global-setup started and removes its state directory. With
// HOSTFLOW_RECORD_HISTORIES set to a directory, it first writes every workflow run's history
// there (`temporal workflow show -o json`), which is how test/histories/ is recorded.
import { rmSync } from 'node:fs';
import { TEST_ENV } from './env.js';
import { recordHistories } from './record-histories.js';

export default async function globalTeardown(): Promise<void> {
  const record = process.env.HOSTFLOW_RECORD_HISTORIES;
  if (record) {
    await recordHistories(record, process.env[TEST_ENV.temporalAddress]!).catch((err: unknown) =>
      console.error(`recording: ${String(err)}`),
    );
  }
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
