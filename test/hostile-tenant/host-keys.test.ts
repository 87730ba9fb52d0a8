// Host keys, end to end (issue 24 item 2): whoever answers at a host's address gets no build user,
// no bootstrap data and no installer key unless it presents the host's key. Real sshd hosts whose
// key is swapped as a reinstall (or an impostor taking over the address) would swap it, the real
// worker and bridge, the real API server. Provisionings' playbooks are in kubespray-run.test.ts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { CoreV1Event } from '@kubernetes/client-node';
import { HOST_KEY_STORE_NAME } from '../../activities/kubernetes/host-key-store.js';
import { waitFor } from '../../local-stack/process.js';
import { ANNOTATIONS, HOST_CONFIG_NAME, LABELS } from '../../platform-config/contract.js';
import { BOOTSTRAP_SENTINEL } from '../../shared/machine-api.js';
import { Machines } from '../support/machines.js';
import { createStaticPool, type StaticPool } from '../support/static-pool.js';

let pool: StaticPool;
let machines: Machines;

beforeAll(async () => {
  pool = await createStaticPool('hostkeys', 2);
  machines = new Machines(pool.scope);
}, 120_000);

afterAll(async () => {
  machines?.stopWatches();
  await pool?.dispose();
});

const engineNamespace = () => pool.scope.engineNamespace;

async function recordedKeys(): Promise<Record<string, string>> {
  const found = await pool.scope.kube.core
    .readNamespacedConfigMap({ name: HOST_KEY_STORE_NAME, namespace: engineNamespace() })
    .catch(() => undefined);
  return found?.data ?? {};
}

/** host-config's Warning Events of this reason, once one matches `pattern`. */
const hostConfigEvent = (reason: string, pattern: RegExp) =>
  waitFor(`a ${reason} Event on host-config matching ${pattern}`, async () => {
    const list = await pool.scope.kube.core.listNamespacedEvent({ namespace: engineNamespace() });
    return list.items.find(
      (e: CoreV1Event) =>
        e.involvedObject.name === HOST_CONFIG_NAME &&
        e.reason === reason &&
        e.type === 'Warning' &&
        pattern.test(e.message ?? ''),
    );
  });

async function taskRunEvents(uid: string) {
  const list = await pool.scope.kube.core.listNamespacedEvent({
    namespace: pool.scope.namespace,
  });
  return list.items.filter((e) => e.involvedObject.uid === uid);
}

/** Runs a TaskRun to its served Secret; returns where it went. Completes it and waits it out. */
async function serve(name: string) {
  const { scope } = pool;
  const tr = await scope.taskRuns.create({ name, platform: pool.platform });
  const secret = await scope.taskRuns.waitForSecret(tr.name);
  const meta = (await scope.taskRuns.get(tr.name)).metadata;
  const events = await taskRunEvents(tr.uid);
  await scope.taskRuns.complete(tr.name);
  await scope.taskRuns.waitForSecretGone(tr.name);
  return { secret, meta, events };
}

/** Host-config is read again when the allocator is told it changed: wait until it has. */
async function untilAllocatorHas(names: string[], gone: string[]): Promise<void> {
  await waitFor(`the allocator to offer ${names.join(', ')}`, async () => {
    const hosts = (await pool.allocator()).hosts.filter((h) => !h.removed).map((h) => h.name);
    const read = names.every((n) => hosts.includes(n)) && !gone.some((n) => hosts.includes(n));
    return read ? true : undefined;
  });
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('a static host without a key in host-config', () => {
  let firstKey = '';

  it('is trusted on first use: its key is recorded and a Warning Event says so', async () => {
    const [h1] = pool.hosts;
    firstKey = h1!.hostPublicKey;
    await pool.scope.setHostConfig(pool.hostEntries([{ host: 0, name: 'tofu', hostKey: null }]));
    const { secret } = await serve('first-use');
    expect(secret.host).toContain(`@${h1!.address}`);
    expect((await recordedKeys())['host.tofu']).toBe(firstKey);
    const event = await hostConfigEvent('HostKeyTrustedOnFirstUse', /ssh host tofu/);
    expect(event.message).toMatch(/trusted its host key SHA256:[A-Za-z0-9+/]{43} on first use/);
    expect(event.message).toContain(`${HOST_KEY_STORE_NAME} key host.tofu`);
    expect(event.message).toContain('host.tofu.host-key');
  });

  it('is refused once it presents another key: the build moves on, nothing is created there', async () => {
    const [h1, h2] = pool.hosts;
    await h1!.swapHostKey();
    // tofu has the more free slots, so it is tried first
    await pool.scope.setHostConfig(
      pool.hostEntries([
        { host: 0, name: 'tofu', concurrency: 2, hostKey: null },
        { host: 1, name: 'other', concurrency: 1 },
      ]),
    );
    const { secret, meta, events } = await serve('after-swap');
    expect(secret.host).toContain(`@${h2!.address}`);
    expect(meta.annotations?.[ANNOTATIONS.failedHosts]).toBe('tofu');
    expect(meta.labels?.[LABELS.assignedHost]).toBe('other');
    const failed = events.find((e) => e.reason === 'ProvisioningFailed');
    expect(failed?.message).toMatch(
      new RegExp(
        `ssh host tofu \\(${escape(h1!.address)}:22\\) presented host key SHA256:\\S+ \\(ssh-ed25519\\), ` +
          'not the one hostflow recorded on first use',
      ),
    );
    expect(failed?.message).toContain(
      'if the host was reinstalled, put its new key in host.tofu.host-key',
    );
    expect(await pool.buildUsers(h1!)).toEqual([]);
    // the first key holds: the impostor's did not replace it
    expect((await recordedKeys())['host.tofu']).toBe(firstKey);
    await hostConfigEvent('HostKeyMismatch', /ssh host tofu/);
  });
});

describe('a static host whose key host-config gives', () => {
  it('gets no build when it presents another key', async () => {
    const [h1, h2] = pool.hosts;
    await pool.scope.setHostConfig(
      pool.hostEntries([
        // an address taken over: host-config has the key of the host that was there (h2's)
        { host: 0, name: 'pinned', concurrency: 2, hostKey: h2!.hostPublicKey },
        { host: 1, name: 'right', concurrency: 1 },
      ]),
    );
    // The allocator reads host-config again when told it changed: until then it still offers tofu.
    await waitFor('the allocator to read the new host-config', async () => {
      const hosts = (await pool.allocator()).hosts.filter((h) => !h.removed).map((h) => h.name);
      return hosts.includes('pinned') && !hosts.includes('tofu') ? true : undefined;
    });
    const { secret, meta, events } = await serve('pinned');
    expect(secret.host).toContain(`@${h2!.address}`);
    expect(meta.annotations?.[ANNOTATIONS.failedHosts]).toBe('pinned');
    const failed = events.find((e) => e.reason === 'ProvisioningFailed');
    expect(failed?.message).toContain(
      `not the one host.pinned.host-key in ConfigMap ${engineNamespace()}/${HOST_CONFIG_NAME} gives`,
    );
    expect(await pool.buildUsers(h1!)).toEqual([]);
    expect((await recordedKeys())['host.pinned']).toBeUndefined(); // a refused key is never recorded
  });

  it("gets no Machine's bootstrap data when it presents another key", async () => {
    const [h1, h2] = pool.hosts;
    await pool.scope.setHostConfig(
      pool.hostEntries([
        {
          host: 0,
          name: 'pinned-m',
          concurrency: 1,
          serves: 'machines',
          hostKey: h2!.hostPublicKey,
        },
      ]),
    );
    await machines.bootstrapSecret(
      'refused-bootstrap',
      '#!/bin/sh\ntouch /var/tmp/bootstrap-ran\n',
    );
    await machines.create('refused', { platform: pool.platform, secret: 'refused-bootstrap' });
    const failed = await machines.readyReason('refused', 'BootstrapFailed');
    expect(machines.condition(failed, 'Ready')?.message).toMatch(
      /ssh host pinned-m \(.*\) presented host key SHA256:\S+ .*not the one host\.pinned-m\.host-key/,
    );
    expect(await machines.eventsInclude('refused', 'BootstrapFailed')).toContain('BootstrapFailed');
    for (const path of ['/var/tmp/bootstrap-ran', BOOTSTRAP_SENTINEL]) {
      expect((await h1!.exec(['test', '-e', path])).code).not.toBe(0);
    }
    await machines.delete('refused');
    await machines.gone('refused');
  });
});

describe('host-config settings for host keys', () => {
  it('require-host-keys refuses a host without one, naming the key to set', async () => {
    const [h1, h2] = pool.hosts;
    await pool.scope.setHostConfig({
      'require-host-keys': 'true',
      ...pool.hostEntries([
        { host: 1, name: 'keyless', concurrency: 2, hostKey: null },
        { host: 0, name: 'keyed', concurrency: 1 },
      ]),
    });
    await untilAllocatorHas(['keyed'], ['pinned-m']);
    const { secret, events } = await serve('required');
    expect(secret.host).toContain(`@${h1!.address}`);
    const skipped = events.find((e) => e.reason === 'HostSkipped');
    expect(skipped?.message).toContain(
      'Host keyless cannot serve until its host-config entry is fixed',
    );
    expect(skipped?.message).toContain(
      'host.keyless.host-key: required, because require-host-keys is "true"',
    );
    await hostConfigEvent('InvalidHostConfig', /^host\.keyless\.host-key: required/);
    expect(await pool.buildUsers(h2!)).toEqual([]);
    expect((await recordedKeys())['host.keyless']).toBeUndefined();
  });

  it('a malformed host-key fails only its host, saying what is wrong and what is expected', async () => {
    const [h1, h2] = pool.hosts;
    await pool.scope.setHostConfig(
      pool.hostEntries([
        { host: 1, name: 'garbled', concurrency: 2, hostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5' },
        { host: 0, name: 'fine', concurrency: 1 },
      ]),
    );
    await untilAllocatorHas(['fine'], ['keyed']);
    const { secret, events } = await serve('garbled');
    expect(secret.host).toContain(`@${h1!.address}`);
    const problem = await hostConfigEvent('InvalidHostConfig', /^host\.garbled\.host-key: /);
    expect(problem.message).toContain('is not a ssh-ed25519 key');
    expect(problem.message).toContain('expected one line "<type> <base64 key>"');
    expect(events.find((e) => e.reason === 'HostSkipped')?.message).toContain(
      'host.garbled.host-key',
    );
    expect(await pool.buildUsers(h2!)).toEqual([]);
  });
});
