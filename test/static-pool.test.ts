// Static host pools end to end on real components: a TaskRun gets a fresh user on a real sshd
// host, redeems its key with the build task's own curl command, logs in with it, and
// everything is removed again when the TaskRun completes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { LABELS } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { statusCode } from '../shared/kube-errors.js';
import { historyText } from './support/history-text.js';
import { lockedByEngine, secretDeleter } from './support/secret-deleter.js';
import { sshCommand } from './support/ssh.js';

const sshExec = async (address: string, user: string, privateKey: string, command: string) =>
  (await sshCommand({ address, user, privateKey }, command)).stdout.trim();
import { redeemSecret } from './support/otp.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';

let pool: StaticPool;

beforeAll(async () => {
  pool = await createStaticPool('static');
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0 }, { host: 1 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

describe('a static-pool TaskRun', () => {
  it('gets a build user it can log in as with the redeemed key, and loses it on completion', async () => {
    const { scope, hosts } = pool;
    const tr = await scope.taskRuns.create({ name: 'happy', platform: pool.platform });
    const secret = await scope.taskRuns.waitForSecret(tr.name);
    expect(Object.keys(secret).sort()).toEqual(['host', 'otp', 'otp-ca', 'otp-server', 'user-dir']);
    const [user, address] = secret.host!.split('@') as [string, string];
    expect(user).toMatch(/^u-[0-9a-f]{12}$/);
    expect(secret['user-dir']).toBe(`/home/${user}/build`);
    expect(secret['otp-server']).toBe(`${pool.otp.url}/otp`);
    const host = hosts.find((h) => h.address === address)!;
    expect(host).toBeDefined();

    const labels = (await scope.taskRuns.get(tr.name)).metadata.labels ?? {};
    expect(labels[LABELS.assignedHost]).toBe(`h${hosts.indexOf(host) + 1}`);
    expect(labels[LABELS.targetPlatform]).toBe(pool.platform.replace('/', '-'));
    expect(labels[LABELS.waitingForPlatform]).toBeUndefined();

    const key = await redeemSecret(secret);
    expect(key).toContain('OPENSSH PRIVATE KEY');
    await expect(redeemSecret(secret)).rejects.toThrow(); // one time only
    expect(await sshExec(address, user, key, 'whoami && cd "$HOME/build" && touch ok && pwd')).toBe(
      `${user}\n${secret['user-dir']}`,
    );
    const other = hosts.find((h) => h !== host)!;
    expect(await pool.buildUsers(other)).not.toContain(user);
    // The host's admin key is what removes the build user: locked while the build runs.
    const adminKey = `admin-${hosts.indexOf(host)}`;
    const tenantDeletes = await secretDeleter(scope);
    expect(await tenantDeletes(adminKey)).toMatch(
      lockedByEngine(scope, adminKey, WORKFLOW_ID.allocator(pool.platform)),
    );
    expect(await tenantDeletes(`admin-${hosts.indexOf(other)}`)).toBe('allowed');

    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);
    expect(await pool.buildUsers(host)).not.toContain(user);
    expect((await host.exec(['test', '-e', `/home/${user}`])).code).not.toBe(0);
    await waitFor('the slot to be released', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );
    await waitFor('the admin key to be unlocked', async () =>
      (await tenantDeletes(adminKey)) === 'allowed' ? true : undefined,
    );

    const reasons = (
      await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace })
    ).items
      .filter((e) => e.involvedObject.uid === tr.uid)
      .map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['HostAllocated', 'CleanedUp']));
  });

  it('keeps private keys and OTPs out of every workflow history', async () => {
    const { scope } = pool;
    const tr = await scope.taskRuns.create({ name: 'scanned', platform: pool.platform });
    const secret = await scope.taskRuns.waitForSecret(tr.name);
    const key = await redeemSecret(secret);
    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);

    const ids = [
      WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
      WORKFLOW_ID.allocator(pool.platform),
    ];
    const keyBody = key.split('\n').filter((line) => line && !line.startsWith('-----'))[0]!;
    for (const id of ids) {
      const text = await historyText(scope.temporal.client, id);
      expect(text).toContain(pool.platform); // the payloads were decoded
      expect(text).not.toContain(secret.otp!);
      expect(text).not.toContain(keyBody);
      expect(text).not.toContain('PRIVATE KEY');
    }
  });
});

describe('metrics', () => {
  it('exposes allocation, slot and provisioning metrics on the worker, and its own on the bridge and OTP service', async () => {
    const text = async (url: string) => (await fetch(url)).text();
    const platform = `platform="${pool.platform}"`;
    const worker = await waitFor('the worker to export the allocator gauges', async () => {
      const body = await text(pool.metrics.worker);
      return body.includes('hostflow_slots_total') ? body : undefined;
    });
    for (const name of [
      'hostflow_allocation_wait_seconds',
      'hostflow_provisioning_seconds',
      'hostflow_queue_length',
    ]) {
      expect(worker).toMatch(new RegExp(`^${name}\\w*\\{[^}]*${platform}`, 'm'));
    }
    expect(worker).toMatch(new RegExp(`^hostflow_slots_total\\{[^}]*${platform}[^}]*\\} 4$`, 'm'));
    expect(await text(pool.metrics.bridge)).toMatch(
      /^hostflow_bridge_signals_total\{[^}]*result="ok"[^}]*\} [1-9]/m,
    );
    expect(await text(pool.metrics.otp)).toMatch(
      /^hostflow_otp_request_seconds_count\{[^}]*route="\/otp"[^}]*status="200"[^}]*\} [1-9]/m,
    );
  });
});

describe('capacity', () => {
  it('never runs more than 2 hosts × 2 slots of builds, and serves 10 TaskRuns in creation order', async () => {
    const { scope, hosts } = pool;
    const names = Array.from({ length: 10 }, (_, i) => `cap-${i}`);
    let maxUsers = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const users = (await Promise.all(hosts.map((h) => pool.buildUsers(h)))).flat();
        maxUsers = Math.max(maxUsers, users.length);
        await new Promise((r) => setTimeout(r, 25));
      }
    })();

    // Each TaskRun is created once the previous one is served or in line, so arrival at the
    // allocator is creation order.
    for (const name of names) {
      await scope.taskRuns.create({ name, platform: pool.platform });
      await waitFor(`${name} to be served or queued`, async () => {
        if (await scope.taskRuns.secret(name)) return true;
        const labels = (await scope.taskRuns.get(name)).metadata.labels ?? {};
        return labels[LABELS.waitingForPlatform] ? true : undefined;
      });
    }
    const served: string[] = [];
    const servedNow = async () => {
      for (const name of names)
        if (!served.includes(name) && (await scope.taskRuns.secret(name))) served.push(name);
    };
    await servedNow();
    expect(served).toEqual(names.slice(0, 4));
    expect((await pool.allocator()).queue).toHaveLength(6);

    // Finish the oldest running build; exactly one waiter moves up each time.
    for (let done = 0; done < names.length; done++) {
      await scope.taskRuns.complete(served[done]!);
      if (served.length < names.length) {
        const before = served.length;
        await waitFor('the next waiter to be served', async () => {
          await servedNow();
          return served.length > before ? true : undefined;
        });
      }
      const state = await pool.allocator();
      expect(state.inUse).toBeLessThanOrEqual(4);
    }
    for (const name of names) await scope.taskRuns.waitForSecretGone(name);
    sampling = false;
    await sampler;
    expect(served).toEqual(names);
    expect(maxUsers).toBeLessThanOrEqual(4);
    expect(maxUsers).toBeGreaterThanOrEqual(3); // the sampler did see the pool full
    await waitFor('all slots free', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );
    for (const host of hosts) expect(await pool.buildUsers(host)).toEqual([]);
  });
});

describe('a broken host entry', () => {
  it('fails only its own platform, quoting the problem, and becomes a Warning Event on the ConfigMap', async () => {
    const { scope } = pool;
    const broken = `${pool.platform}x`;
    await scope.setHostConfig({
      ...pool.hostEntries([{ host: 0 }, { host: 1 }]),
      'host.bad.address': '10.231.0.250',
      'host.bad.user': 'root',
      'host.bad.platform': broken,
      'host.bad.secret': 'admin-0',
    });
    await scope.taskRuns.create({ name: 'on-broken', platform: broken });
    await scope.taskRuns.create({ name: 'on-good', platform: pool.platform });
    const error = (await scope.taskRuns.waitForSecret('on-broken')).error!;
    expect(error).toContain(`platform ${broken} is misconfigured`);
    expect(error).toMatch(/host\.bad\.concurrency: required, an integer from 1 to 8/);
    expect((await scope.taskRuns.waitForSecret('on-good')).host).toMatch(/^u-[0-9a-f]{12}@/);

    const warning = await waitFor('a Warning Event on host-config', async () => {
      const list = await scope.kube.core.listNamespacedEvent({ namespace: scope.engineNamespace });
      return list.items.find(
        (e) => e.type === 'Warning' && e.message?.includes('host.bad.concurrency'),
      );
    });
    expect(warning.involvedObject).toMatchObject({ kind: 'ConfigMap', name: 'host-config' });
    expect(warning.reason).toBe('InvalidHostConfig');
    for (const name of ['on-broken', 'on-good']) await scope.taskRuns.complete(name);
    for (const name of ['on-broken', 'on-good']) await scope.taskRuns.waitForSecretGone(name);
    await scope.setHostConfig(pool.hostEntries([{ host: 0 }, { host: 1 }]));
  });
});

describe('live host-config changes', () => {
  it('serves waiters on an added host at once, and drains a removed host', async () => {
    const { scope, hosts } = pool;
    await scope.setHostConfig(pool.hostEntries([{ host: 0, concurrency: 1 }]));
    // Changes reach the allocator asynchronously (bridge → hostconfig workflow → allocator).
    await waitFor('the allocator to serve h1 alone', async () => {
      // (no allocator yet: the first request starts one that reads the config then)
      const state = await pool.allocator().catch((err: Error) => {
        if (err.name === 'WorkflowNotFoundError') return { hosts: [{ name: 'h1' }], capacity: 1 };
        throw err;
      });
      return state.hosts.map((h) => h.name).join() === 'h1' && state.capacity === 1
        ? true
        : undefined;
    });
    await scope.taskRuns.create({ name: 'live-1', platform: pool.platform });
    const first = await scope.taskRuns.waitForSecret('live-1');
    expect(first.host).toContain(`@${hosts[0]!.address}`);
    await scope.taskRuns.create({ name: 'live-2', platform: pool.platform });
    await waitFor('live-2 to wait', async () =>
      (await scope.taskRuns.get('live-2')).metadata.labels?.[LABELS.waitingForPlatform]
        ? true
        : undefined,
    );

    // Adding h2 serves the waiter without anything finishing.
    await scope.setHostConfig(
      pool.hostEntries([
        { host: 0, concurrency: 1 },
        { host: 1, concurrency: 1 },
      ]),
    );
    const second = await scope.taskRuns.waitForSecret('live-2');
    expect(second.host).toContain(`@${hosts[1]!.address}`);

    // Removing h1 while live-1 runs there: no new work goes to h1, live-1 still cleans up on it.
    await scope.setHostConfig(pool.hostEntries([{ host: 1, concurrency: 2 }]));
    await waitFor('h1 to be marked removed', async () =>
      (await pool.allocator()).hosts.find((h) => h.name === 'h1')?.removed ? true : undefined,
    );
    await scope.taskRuns.create({ name: 'live-3', platform: pool.platform });
    expect((await scope.taskRuns.waitForSecret('live-3')).host).toContain(`@${hosts[1]!.address}`);
    const user1 = first.host!.split('@')[0]!;
    expect(await pool.buildUsers(hosts[0]!)).toContain(user1);
    await scope.taskRuns.complete('live-1');
    await scope.taskRuns.waitForSecretGone('live-1');
    expect(await pool.buildUsers(hosts[0]!)).not.toContain(user1);
    await waitFor('h1 to be dropped once drained', async () =>
      (await pool.allocator()).hosts.some((h) => h.name === 'h1') ? undefined : true,
    );
    for (const name of ['live-2', 'live-3']) await scope.taskRuns.complete(name);
    for (const name of ['live-2', 'live-3']) await scope.taskRuns.waitForSecretGone(name);
    await scope.setHostConfig(pool.hostEntries([{ host: 0 }, { host: 1 }]));
  });
});

// Last in the file: it deletes the file's TaskRun namespace. The stack's namespace controller
// deletes the TaskRuns and their Secrets; the bridge sees the TaskRuns go, and their workflows
// clean up what hostflow made outside the namespace: the build users on the hosts, the slots.
describe('a namespace deleted while its TaskRuns hold build users', () => {
  it("goes, and its TaskRuns' workflows end, removing the build users and freeing the slots", async () => {
    const { scope, hosts } = pool;
    const runs = [];
    for (const name of ['doomed-1', 'doomed-2'])
      runs.push(await scope.taskRuns.create({ name, platform: pool.platform }));
    const users: string[] = [];
    for (const tr of runs)
      users.push((await scope.taskRuns.waitForSecret(tr.name)).host!.split('@')[0]!);
    expect((await pool.allocator()).inUse).toBe(2);

    await scope.kube.core.deleteNamespace({ name: scope.namespace });
    for (const tr of runs) {
      const id = WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid);
      await scope.temporal.client.workflow.getHandle(id).result();
    }
    const left = (await Promise.all(hosts.map((h) => pool.buildUsers(h)))).flat();
    expect(left.filter((u) => users.includes(u))).toEqual([]);
    await waitFor('the slots to be released', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );
    await waitFor(
      `namespace ${scope.namespace} to be deleted`,
      () =>
        scope.kube.core.readNamespace({ name: scope.namespace }).then(
          () => undefined,
          (err: unknown) => (statusCode(err) === 404 ? true : Promise.reject(err)),
        ),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  });
});
