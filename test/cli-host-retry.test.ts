// On-call commands that act through the engine: `hostflow host drain|undrain` takes a static host
// out of rotation and brings it back (the allocator's setHostDrained update), and `hostflow
// retry taskrun` serves a Failed TaskRun again once its cause is fixed (its workflow's
// retryTaskRun update). Real sshd hosts, worker, bridge and Temporal; the CLI as on-call runs it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { waitFor } from '../local-stack/process.js';
import { ANNOTATIONS, LABELS } from '../platform-config/contract.js';
import type { HostDrainOutcome } from '../shared/contracts/allocator.js';
import {
  applyHosts,
  emptyState,
  request,
  serveQueue,
  setDrained,
  summary,
} from '../workflows/allocator/allocation.js';
import { testEnv } from './support/env.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { decode } from './support/taskruns.js';

const run = promisify(execFile);
let pool: StaticPool;

/** The admin keys' Secrets, named here so the retry test can break and mend them in place. */
const KEY = (i: number) => `key-${i}`;

beforeAll(async () => {
  pool = await createStaticPool('hostcli');
  for (const [i, host] of pool.hosts.entries())
    await pool.adminSecret(KEY(i), host.adminPrivateKey);
  // h1 has two slots, h2 one: a new build goes to h1 while h1 is in rotation.
  await pool.scope.setHostConfig(
    pool.hostEntries([
      { host: 0, concurrency: 2, secret: KEY(0) },
      { host: 1, concurrency: 1, secret: KEY(1) },
    ]),
  );
});

afterAll(async () => {
  await pool?.dispose();
});

/** Runs `hostflow …` with the engine's environment, as on-call would. */
async function hostflow(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: testEnv('temporalAddress'),
    TEMPORAL_NAMESPACE: testEnv('temporalNamespace'),
    KUBECONFIG: testEnv('kubeconfig'),
  };
  return run(process.execPath, [join(REPO_ROOT, 'dist/cli/hostflow.js'), ...args], { env }).then(
    ({ stdout, stderr }) => ({ code: 0, out: stdout, err: stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      out: e.stdout,
      err: e.stderr,
    }),
  );
}

const addressOf = (secret: Record<string, string>) => secret.host!.split('@')[1];
const userOf = (secret: Record<string, string>) => secret.host!.split('@')[0]!;

async function waiting(name: string): Promise<boolean> {
  const labels = (await pool.scope.taskRuns.get(name)).metadata.labels ?? {};
  return labels[LABELS.waitingForPlatform] !== undefined;
}

async function served(name: string): Promise<Record<string, string> | undefined> {
  const secret = await pool.scope.taskRuns.secret(name);
  const data = secret ? decode(secret) : undefined;
  return data?.host ? data : undefined;
}

describe('hostflow host drain|undrain', () => {
  it('places no new build on a drained host, lets its build finish, and serves a waiter on undrain', async () => {
    const { scope, hosts, platform } = pool;
    const [h1, h2] = [hosts[0]!, hosts[1]!];
    const first = await scope.taskRuns.create({ name: 'd-running', platform });
    const running = await scope.taskRuns.waitForSecret(first.name);
    expect(addressOf(running)).toBe(h1.address);

    const drained = await hostflow('host', 'drain', platform, 'h1', '-o', 'json');
    expect(drained.code).toBe(0);
    expect(JSON.parse(drained.out) as HostDrainOutcome).toEqual({
      platform,
      host: 'h1',
      drained: true,
      changed: true,
      inUse: 1,
      capacity: 2,
      waiting: 0,
    });
    const state = await pool.allocator();
    expect(state.drained).toEqual(['h1']);
    expect(state.hosts.find((h) => h.name === 'h1')).toMatchObject({ drained: true, inUse: 1 });
    expect(state.hosts.find((h) => h.name === 'h2')).toMatchObject({ drained: false });
    const again = await hostflow('host', 'drain', platform, 'h1');
    expect(again).toMatchObject({ code: 0 });
    expect(again.out).toMatch(
      /host h1 of .* is drained \(it already was\): 1 of its 2 slots in use/,
    );

    // h1 still has a free slot, but the next build goes to h2, and the one after waits.
    await scope.taskRuns.create({ name: 'd-other', platform });
    expect(addressOf(await scope.taskRuns.waitForSecret('d-other'))).toBe(h2.address);
    await scope.taskRuns.create({ name: 'd-waiter', platform });
    await waitFor('d-waiter to wait', async () => ((await waiting('d-waiter')) ? true : undefined));

    // The build on the drained host finishes and is cleaned up there; the waiter keeps waiting.
    await scope.taskRuns.complete(first.name);
    await scope.taskRuns.waitForSecretGone(first.name);
    expect(await pool.buildUsers(h1)).not.toContain(userOf(running));
    const after = await waitFor('h1 to be empty', async () => {
      const s = await pool.allocator();
      return s.hosts.find((h) => h.name === 'h1')?.inUse === 0 ? s : undefined;
    });
    expect(after.queue).toHaveLength(1);
    expect(await served('d-waiter')).toBeUndefined();

    const undrained = await hostflow('host', 'undrain', platform, 'h1');
    expect(undrained.code).toBe(0);
    expect(undrained.out).toMatch(
      /host h1 of .* is in rotation: 0 of its 2 slots in use; 1 waiting TaskRun\(s\) are served on it/,
    );
    expect(addressOf(await scope.taskRuns.waitForSecret('d-waiter'))).toBe(h1.address);
    expect((await pool.allocator()).drained).toEqual([]);

    for (const name of ['d-other', 'd-waiter']) await scope.taskRuns.complete(name);
    for (const name of ['d-other', 'd-waiter']) await scope.taskRuns.waitForSecretGone(name);
    await waitFor('all slots free', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );
  });

  it('refuses an unknown host, an unknown platform and bad arguments, saying why', async () => {
    const { platform } = pool;
    const host = await hostflow('host', 'drain', platform, 'h9');
    expect(host.code).toBe(1);
    expect(host.err).toContain(
      `host "h9" is not a host of platform ${platform}: its hosts are h1, h2`,
    );

    const unknown = await hostflow('host', 'drain', 'linux/no-such-platform', 'h1');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no allocator runs for platform linux/no-such-platform');

    const malformed = await hostflow('host', 'drain', 'arm64', 'h1');
    expect(malformed.code).toBe(2);
    expect(malformed.err).toContain('PLATFORM "arm64" must have the form os/arch');
    const action = await hostflow('host', 'cordon', platform, 'h1');
    expect(action.code).toBe(2);
    expect(action.err).toContain('"cordon" is not an action: use drain or undrain');
    const output = await hostflow('host', 'drain', platform, 'h1', '-o', 'yaml');
    expect(output.code).toBe(2);
    expect((await pool.allocator()).drained).toEqual([]); // nothing was drained on the way
  });

  it('keeps a drain across JSON carry-over (continue-as-new) and config reloads', () => {
    const host = (name: string) => ({
      name,
      address: `${name}.example`,
      user: 'admin',
      secret: 'k',
      concurrency: 1,
      sudoCommands: [],
    });
    const state = emptyState();
    applyHosts(state, [host('a'), host('b')]);
    expect(setDrained(state, 'a', true)).toBe(true);
    // What continue-as-new carries, then a reload that drops and re-adds the host.
    const carried = JSON.parse(JSON.stringify(state)) as typeof state;
    applyHosts(carried, [host('b')]);
    applyHosts(carried, [host('a'), host('b')]);
    expect(summary(carried, 0).drained).toEqual(['a']);
    const random = () => 0;
    expect(request(carried, { requestId: 'x#r.1', excluded: [], requestedAt: 0 }, random)).toEqual({
      status: 'granted',
      host: host('b'),
    });
    expect(request(carried, { requestId: 'y#r.1', excluded: [], requestedAt: 0 }, random)).toEqual({
      status: 'queued',
      position: 1,
    });
    expect(setDrained(carried, 'a', false)).toBe(true);
    expect(serveQueue(carried, random).grants).toEqual([{ requestId: 'y#r.1', host: host('a') }]);
  });
});

describe('hostflow retry taskrun', () => {
  it('serves a TaskRun that failed on every host once the cause is fixed, and refuses what has nothing to retry', async () => {
    const { scope, hosts, platform } = pool;
    const ns = scope.namespace;
    // Every host's admin key is wrong: authentication fails everywhere, and the build is answered.
    for (const i of hosts.keys()) await replaceKey(KEY(i), generateEd25519KeyPair('x').privateKey);
    const tr = await scope.taskRuns.create({ name: 'r-failed', platform });
    const failed = await scope.taskRuns.waitForSecret(tr.name, 60_000);
    expect(Object.keys(failed)).toEqual(['error']);
    expect(failed.error).toMatch(/Tried: h[12], h[12]\./);

    for (const [i, host] of hosts.entries()) await replaceKey(KEY(i), host.adminPrivateKey);
    const retried = await hostflow('retry', 'taskrun', `${ns}/r-failed`);
    expect(retried.err).toBe('');
    expect(retried.code).toBe(0);
    expect(retried.out).toContain(`TaskRun ${ns}/r-failed is being served again (retry 1)`);
    expect(retried.out).toContain('no ' + platform + ' host could be provisioned');
    const secret = await waitFor('r-failed to be served', () => served(tr.name), {
      timeoutMs: 60_000,
    });
    expect(secret.error).toBeUndefined();
    const meta = (await scope.taskRuns.get(tr.name)).metadata;
    expect(meta.annotations?.[ANNOTATIONS.failedHosts]).toBeUndefined();
    const events = (await scope.kube.core.listNamespacedEvent({ namespace: ns })).items.filter(
      (e) => e.involvedObject.uid === tr.uid,
    );
    expect(events.map((e) => e.reason)).toEqual(
      expect.arrayContaining(['ProvisioningFailed', 'RetryRequested', 'HostAllocated']),
    );

    // Served now: nothing to retry.
    const servedNow = await hostflow('retry', 'taskrun', `${ns}/r-failed`);
    expect(servedNow.code).toBe(1);
    expect(servedNow.err).toMatch(
      new RegExp(`nothing to retry: TaskRun ${ns}/r-failed is not failed, it is served by h[12]`),
    );

    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);
    for (const host of hosts) expect(await pool.buildUsers(host)).toEqual([]);
    const completed = await hostflow('retry', 'taskrun', `${ns}/r-failed`);
    expect(completed.code).toBe(1);
    expect(completed.err).toContain(`TaskRun ${ns}/r-failed has already completed`);

    const missing = await hostflow('retry', 'taskrun', `${ns}/no-such-taskrun`);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(`there is no TaskRun ${ns}/no-such-taskrun`);
    const malformed = await hostflow('retry', 'taskrun', 'r-failed');
    expect(malformed.code).toBe(2);
    expect(malformed.err).toContain('is not NAMESPACE/NAME of a TaskRun');
  });
});

/** Rotates an admin key Secret in place (deleting it is locked while builds run). */
async function replaceKey(name: string, key: string): Promise<void> {
  await pool.scope.kube.core.replaceNamespacedSecret({
    name,
    namespace: pool.scope.engineNamespace,
    body: { metadata: { name }, stringData: { id_rsa: key } },
  });
}
