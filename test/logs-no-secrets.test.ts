// A static-pool TaskRun end to end at HOSTFLOW_LOG_LEVEL=debug: the worker's, the bridge's and
// the OTP service's output is JSON lines an operator can search (activity lines name the
// workflow and the TaskRun), and none holds the OTP, the build's private key or the host's
// admin key.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { LOG_LEVELS } from '../runtime/logger.js';
import { testEnv } from './support/env.js';
import { redeemSecret } from './support/otp.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';

let pool: StaticPool;

beforeAll(async () => {
  // Read by every process the pool starts (the OTP service takes the test's environment).
  const before = process.env.HOSTFLOW_LOG_LEVEL;
  process.env.HOSTFLOW_LOG_LEVEL = 'debug';
  try {
    pool = await createStaticPool('logs');
  } finally {
    if (before === undefined) delete process.env.HOSTFLOW_LOG_LEVEL;
    else process.env.HOSTFLOW_LOG_LEVEL = before;
  }
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0 }, { host: 1 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

/** A key's body lines, each a leak on its own (a short last line could match by chance). */
const keyLines = (pem: string): string[] =>
  pem.split('\n').filter((line) => line.length >= 20 && !line.startsWith('-----'));

type Line = Record<string, unknown>;

/** Every whole line of a process's log file (the last one may still be being written). */
function logLines(kind: 'worker' | 'bridge' | 'otp'): { text: string; lines: string[] } {
  const text = readFileSync(
    join(testEnv('stateDir'), 'logs', `${kind}-${pool.scope.namespace}.log`),
    'utf8',
  );
  return { text, lines: text.split('\n').slice(0, -1) };
}

describe('process logs', () => {
  it('are JSON lines with the TaskRun on every activity line, and never hold a secret', async () => {
    const { scope, hosts } = pool;
    const tr = await scope.taskRuns.create({ name: 'logged', platform: pool.platform });
    const secret = await scope.taskRuns.waitForSecret(tr.name);
    const key = await redeemSecret(secret);
    expect(key).toContain('OPENSSH PRIVATE KEY');
    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);
    await waitFor('the slot to be released', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );

    const files = { worker: logLines('worker'), bridge: logLines('bridge'), otp: logLines('otp') };
    const parsed: Record<keyof typeof files, Line[]> = { worker: [], bridge: [], otp: [] };
    for (const [kind, { lines }] of Object.entries(files) as Array<
      [keyof typeof files, { lines: string[] }]
    >) {
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        let record: Line;
        try {
          record = JSON.parse(line) as Line;
        } catch {
          throw new Error(`${kind} wrote a line that is not JSON: ${line}`);
        }
        expect(LOG_LEVELS).toContain(record.level);
        expect(typeof record.time).toBe('string');
        expect(typeof record.msg).toBe('string');
        parsed[kind].push(record);
      }
    }
    const msgs = (kind: keyof typeof files) => parsed[kind].map((r) => r.msg as string);
    expect(msgs('worker').some((m) => m.includes('hostflow worker polling'))).toBe(true);
    expect(msgs('bridge').some((m) => m.includes('hostflow bridge watching'))).toBe(true);
    expect(msgs('otp').some((m) => m.includes('listening on'))).toBe(true);
    expect(msgs('otp').some((m) => /^POST \/otp 200 /.test(m))).toBe(true); // the redemption
    expect(parsed.worker.some((r) => r.level === 'debug')).toBe(true); // HOSTFLOW_LOG_LEVEL
    const workflowId = WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid);
    // The bridge's lines about the TaskRun carry the same fields as the worker's.
    expect(parsed.bridge).toContainEqual(
      expect.objectContaining({
        level: 'debug',
        workflowId,
        k8sNamespace: scope.namespace,
        k8sName: tr.name,
      }),
    );

    // Every activity line of the TaskRun's workflow names the TaskRun; its delivery names the
    // platform and the host too.
    const activityLines = parsed.worker.filter(
      (r) => r.workflowId === workflowId && typeof r.activityType === 'string',
    );
    expect(activityLines.length).toBeGreaterThan(0);
    for (const r of activityLines) {
      expect(r).toMatchObject({ k8sNamespace: scope.namespace, k8sName: tr.name });
    }
    const delivered = activityLines.find(
      (r) => r.activityType === 'deliverBuildUser' && r.msg === 'Activity completed',
    );
    expect(delivered).toMatchObject({ platform: pool.platform });
    expect(['h1', 'h2']).toContain(delivered!.host);
    const allocatorLines = parsed.worker.filter(
      (r) => r.workflowId === WORKFLOW_ID.allocator(pool.platform),
    );
    for (const r of allocatorLines) expect(r.platform).toBe(pool.platform);

    const secrets = [
      secret.otp!,
      ...keyLines(key),
      ...hosts.flatMap((h) => keyLines(h.adminPrivateKey)),
      readFileSync(pool.otp.files.storeToken, 'utf8').trim(),
    ];
    expect(secrets.length).toBeGreaterThan(6);
    const all = Object.values(files)
      .map((f) => f.text)
      .join('\n');
    for (const value of secrets) {
      // Positive control: a real value, that a log holding it would be caught with.
      expect(value.length).toBeGreaterThanOrEqual(16);
      expect(`{"msg":"${value}"}`.includes(value)).toBe(true);
      expect(all.includes(value)).toBe(false);
    }
    expect(all).not.toContain('PRIVATE KEY');
  });
});
