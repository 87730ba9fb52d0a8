// When hosts fail: retry elsewhere, an error Secret once every host failed, and a worker
// killed mid-provisioning that leaks neither a user nor a slot.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { netnsPids } from '../local-stack/netns.js';
import { waitFor } from '../local-stack/process.js';
import type { SshHost } from '../local-stack/ssh-hosts.js';
import { ANNOTATIONS, LABELS } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { SA } from '../shared/search-attributes.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { diagnoseWorkflow } from './support/workflow-diagnosis.js';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';

let pool: StaticPool;

beforeAll(async () => {
  pool = await createStaticPool('failing');
  // A valid key that no host accepts: authentication is rejected, which retrying cannot fix.
  await pool.adminSecret('wrong-key', generateEd25519KeyPair('test').privateKey);
});

afterAll(async () => {
  await pool?.dispose();
});

async function eventsOf(uid: string) {
  const list = await pool.scope.kube.core.listNamespacedEvent({ namespace: pool.scope.namespace });
  return list.items.filter((e) => e.involvedObject.uid === uid);
}

async function signalHost(host: SshHost, signal: NodeJS.Signals): Promise<void> {
  for (const pid of await netnsPids(host.name)) {
    try {
      process.kill(pid, signal);
    } catch (err) {
      // a session's process that ended since it was listed (an earlier test's connection)
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
}

/**
 * Freezes every sshd, then creates the TaskRun: its provisioning hangs on the SSH handshake.
 * Resolves once it is provisioning; `thaw` lets the hosts go on (again safe to call).
 */
async function provisioningFrozen(name: string) {
  const { scope, hosts } = pool;
  await scope.setHostConfig(pool.hostEntries([{ host: 0 }, { host: 1 }]));
  for (const host of hosts) await signalHost(host, 'SIGSTOP');
  let frozen = true;
  const thaw = async () => {
    if (frozen) for (const host of hosts) await signalHost(host, 'SIGCONT');
    frozen = false;
  };
  try {
    const tr = await scope.taskRuns.create({ name, platform: pool.platform });
    const handle = scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
    );
    await waitFor('provisioning to start', async () =>
      (await handle.describe()).typedSearchAttributes.get(SA.phase) === 'Provisioning'
        ? true
        : undefined,
    ).catch(async (err: Error) => {
      const allocator = scope.temporal.client.workflow.getHandle(
        WORKFLOW_ID.allocator(pool.platform),
      );
      const why = [handle, allocator].map((h) => diagnoseWorkflow(h));
      throw new Error(`${err.message}\n${(await Promise.all(why)).join('\n')}`, { cause: err });
    });
    return { tr, handle, thaw };
  } catch (err) {
    await thaw();
    throw err;
  }
}

describe('provisioning failures', () => {
  it('moves on to another host when one fails, and records the failed host', async () => {
    const { scope, hosts } = pool;
    // h1 has more free slots, so it is tried first; its admin key is wrong.
    await scope.setHostConfig(
      pool.hostEntries([
        { host: 0, concurrency: 2, secret: 'wrong-key' },
        { host: 1, concurrency: 1 },
      ]),
    );
    const tr = await scope.taskRuns.create({ name: 'retry-elsewhere', platform: pool.platform });
    const secret = await scope.taskRuns.waitForSecret(tr.name);
    expect(secret.host).toContain(`@${hosts[1]!.address}`);
    const meta = (await scope.taskRuns.get(tr.name)).metadata;
    expect(meta.annotations?.[ANNOTATIONS.failedHosts]).toBe('h1');
    expect(meta.labels?.[LABELS.assignedHost]).toBe('h2');
    const failed = (await eventsOf(tr.uid)).find((e) => e.reason === 'ProvisioningFailed');
    expect(failed?.type).toBe('Warning');
    expect(failed?.message).toMatch(/h1.*(authentication|rejected)/i);
    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);
    expect(await pool.buildUsers(hosts[1]!)).toEqual([]);
  });

  it('writes an error Secret naming every host once all of them failed', async () => {
    const { scope } = pool;
    await scope.setHostConfig(
      pool.hostEntries([
        { host: 0, secret: 'wrong-key' },
        { host: 1, secret: 'wrong-key' },
      ]),
    );
    const tr = await scope.taskRuns.create({ name: 'all-fail', platform: pool.platform });
    const data = await scope.taskRuns.waitForSecret(tr.name, 60_000);
    expect(Object.keys(data)).toEqual(['error']);
    expect(data.error).toMatch(new RegExp(`no ${pool.platform} host could be provisioned`));
    expect(data.error).toMatch(/Tried: h[12], h[12]\./);
    expect(data.error).toMatch(/Last error: .*(authentication|rejected)/i);
    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);
    await waitFor('slots free', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );
  });
});

describe('a worker killed mid-provisioning', () => {
  it('leaks no user and no slot', async () => {
    const { scope, hosts } = pool;
    // Provisioning hangs on the SSH handshake, so the kill lands mid-way.
    const { tr, thaw } = await provisioningFrozen('worker-killed');
    try {
      await pool.worker.kill();
      await thaw();
      await pool.restartWorker();

      const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
      const user = secret.host!.split('@')[0]!;
      const users = (await Promise.all(hosts.map((h) => pool.buildUsers(h)))).flat();
      expect(users).toEqual([user]); // exactly one build user, on one host
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);
      for (const host of hosts) expect(await pool.buildUsers(host)).toEqual([]);
      await waitFor('slots free', async () =>
        (await pool.allocator()).inUse === 0 ? true : undefined,
      );
    } finally {
      await thaw();
    }
  });
});

describe('an allocator lost while a build user is being delivered', () => {
  it('keeps serving the TaskRun it delivered to, and frees the user at the end', async () => {
    const { scope, hosts } = pool;
    const { tr, handle, thaw } = await provisioningFrozen('allocator-lost'); // delivery hangs
    try {
      await scope.temporal.client.workflow
        .getHandle(WORKFLOW_ID.allocator(pool.platform))
        .terminate('test: the allocator is lost');
      await thaw();

      // Its report to the allocator now fails: that must not undo a delivered build user.
      const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
      await waitFor('the TaskRun served', async () =>
        (await handle.describe()).typedSearchAttributes.get(SA.phase) === 'Ready'
          ? true
          : undefined,
      );
      const meta = (await scope.taskRuns.get(tr.name)).metadata;
      expect(meta.annotations?.[ANNOTATIONS.failedHosts]).toBeUndefined();
      const user = secret.host!.split('@')[0]!;
      expect((await Promise.all(hosts.map((h) => pool.buildUsers(h)))).flat()).toEqual([user]);
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);
      for (const host of hosts) expect(await pool.buildUsers(host)).toEqual([]);
    } finally {
      await thaw();
    }
  });
});
