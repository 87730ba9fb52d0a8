// Blame only what failed (docs/architecture.md, "Blame only what failed"), on real components: a TaskRun's own input, the
// OTP service, Kubernetes and a host's config entry failing never cost a healthy host its
// health or a TaskRun its failed-hosts; every build gets an answer (a served or `error` Secret,
// or a Warning Event where no Secret can exist), naming the real cause.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { ensureCa, ensureCert } from '../local-stack/pki.js';
import { waitFor } from '../local-stack/process.js';
import { ANNOTATIONS, secretNameFor } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { testEnv } from './support/env.js';
import { redeemWithCurl } from './support/otp.js';
import { refuse } from './support/refusals.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

let pool: StaticPool;

beforeAll(async () => {
  pool = await createStaticPool('blame');
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0 }, { host: 1 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

async function eventsOf(uid: string) {
  const list = await pool.scope.kube.core.listNamespacedEvent({ namespace: pool.scope.namespace });
  return list.items.filter((e) => e.involvedObject.uid === uid);
}

const eventNamed = (uid: string, reason: string) =>
  waitFor(`Event ${reason}`, async () => (await eventsOf(uid)).find((e) => e.reason === reason), {
    timeoutMs: 60_000,
  });

/** Every host healthy, no slot held, nobody waiting: what a blameless platform looks like. */
async function expectPlatformUntouched(): Promise<void> {
  await waitFor('every slot free', async () =>
    (await pool.allocator()).inUse === 0 ? true : undefined,
  );
  const view = await pool.allocator();
  for (const host of view.hosts) {
    expect({ host: host.name, health: host.health, failures: host.consecutiveFailures }).toEqual({
      host: host.name,
      health: 'healthy',
      failures: 0,
    });
  }
}

/**
 * Changes host-config and waits until the allocator serves from it (it learns of changes
 * asynchronously): each change here gives the hosts capacities of their own, to tell them apart.
 */
async function configured(
  specs: Array<{ host: number; concurrency?: number; secret?: string }>,
): Promise<void> {
  await pool.scope.setHostConfig(pool.hostEntries(specs));
  const want = specs.map((s) => `h${s.host + 1}:${s.concurrency ?? 2}`).join();
  await waitFor(`the allocator to serve ${want}`, async () => {
    const view = await pool.allocator().catch(() => undefined);
    if (!view) return true; // no allocator yet: the first request starts one that reads it
    const seen = view.hosts
      .filter((h) => !h.removed)
      .map((h) => `${h.name}:${h.capacity}`)
      .join();
    return seen === want ? true : undefined;
  });
}

async function failedHostsOf(name: string): Promise<string | undefined> {
  return (await pool.scope.taskRuns.get(name)).metadata.annotations?.[ANNOTATIONS.failedHosts];
}

describe("a TaskRun's own input", () => {
  it('a name too long for its Secret touches no host: a Warning Event, and the next build is served', async () => {
    const { scope, hosts } = pool;
    // 235 characters: a valid TaskRun name, but multi-platform-ssh-<name> would be 254.
    const long = Array.from({ length: 4 }, (_, i) => `${'x'.repeat(233)}-${i}`);
    const created = await Promise.all(
      long.map((name) => scope.taskRuns.create({ name, platform: pool.platform })),
    );
    for (const tr of created) {
      const event = await eventNamed(tr.uid, 'CannotServe');
      expect(event.type).toBe('Warning');
      expect(event.message).toMatch(/235 characters long.*more than the 253.*at most 234/);
      const handle = scope.temporal.client.workflow.getHandle(
        WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
      );
      await waitFor('its workflow to end cleanly', async () =>
        (await handle.describe()).status.name === 'COMPLETED' ? true : undefined,
      );
    }
    for (const host of hosts) expect(await pool.buildUsers(host)).toEqual([]);
    // Nothing was even asked of the platform's allocator: it has not been started.
    await expect(pool.allocator()).rejects.toThrow(/not found/);

    const t0 = Date.now();
    const next = await scope.taskRuns.create({ name: 'after-long-names', platform: pool.platform });
    const secret = await scope.taskRuns.waitForSecret(next.name, 30_000);
    console.log(`a normal TaskRun after 4 over-long names was served in ${Date.now() - t0} ms`);
    expect(secret.otp).toBeDefined();
    await scope.taskRuns.complete(next.name);
    await scope.taskRuns.waitForSecretGone(next.name);
    await expectPlatformUntouched();
  });
});

describe('the OTP service down', () => {
  it('keeps TaskRuns waiting on it, not on the hosts, and serves them all once it is back', async () => {
    const { scope } = pool;
    await pool.killOtp();
    const names = ['otp-down-1', 'otp-down-2', 'otp-down-3'];
    const created = await Promise.all(
      names.map((name) => scope.taskRuns.create({ name, platform: pool.platform })),
    );
    try {
      for (const tr of created) {
        const delayed = await eventNamed(tr.uid, 'DeliveryDelayed');
        expect(delayed.message).toMatch(/Waiting for the OTP service .*unreachable/);
      }
      const details = await scope.temporal.client.workflow
        .getHandle(WORKFLOW_ID.taskRun(scope.namespace, created[0]!.name, created[0]!.uid))
        .describe();
      expect(details.status.name).toBe('RUNNING');
      for (const name of names) expect(await scope.taskRuns.secret(name)).toBeUndefined();
    } finally {
      await pool.startOtp();
    }
    for (const name of names) {
      const secret = await scope.taskRuns.waitForSecret(name, 60_000);
      expect(Object.keys(secret).sort()).toEqual([
        'host',
        'otp',
        'otp-ca',
        'otp-server',
        'user-dir',
      ]);
      expect(await failedHostsOf(name)).toBeUndefined();
    }
    for (const name of names) await scope.taskRuns.complete(name);
    for (const name of names) await scope.taskRuns.waitForSecretGone(name);
    await expectPlatformUntouched();
  });
});

describe("a host's config entry", () => {
  it('a missing admin key Secret skips that host without blaming it; with every key missing the error names them', async () => {
    const { scope } = pool;
    // h2 has more free slots, so it is tried first; its admin key Secret does not exist.
    await configured([
      { host: 0, concurrency: 1 },
      { host: 1, concurrency: 3, secret: 'no-such-key' },
    ]);
    try {
      const tr = await scope.taskRuns.create({ name: 'skips-h2', platform: pool.platform });
      const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
      expect(secret.host).toContain(`@${pool.hosts[0]!.address}`);
      expect(await failedHostsOf(tr.name)).toBeUndefined();
      expect((await eventNamed(tr.uid, 'HostSkipped')).message).toMatch(
        /h2 cannot serve until its host-config entry is fixed: .*no-such-key not found/,
      );
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);

      await configured([
        { host: 0, concurrency: 2, secret: 'no-such-key' },
        { host: 1, concurrency: 4, secret: 'no-such-key' },
      ]);
      const none = await scope.taskRuns.create({ name: 'no-keys', platform: pool.platform });
      const data = await scope.taskRuns.waitForSecret(none.name, 60_000);
      expect(data.error).toMatch(/Skipped \(host-config entry cannot serve\): h[12], h[12]\./);
      expect(data.error).toMatch(/no-such-key not found/);
      expect(await failedHostsOf(none.name)).toBeUndefined();
      await scope.taskRuns.complete(none.name);
      await scope.taskRuns.waitForSecretGone(none.name);
      await expectPlatformUntouched();
    } finally {
      await configured([{ host: 0 }, { host: 1 }]);
    }
  });
});

describe('Kubernetes refusing writes', () => {
  const dryRunPatchTaskRun = (name: string) =>
    pool.scope.kube.custom.patchNamespacedCustomObject(
      {
        ...TASKRUN_API,
        namespace: pool.scope.namespace,
        name,
        body: { metadata: { labels: { probe: 'x' } } },
        dryRun: 'All',
      },
      MERGE_PATCH,
    );
  const dryRunCreateSecret = (name: string) =>
    pool.scope.kube.core.createNamespacedSecret({
      namespace: pool.scope.namespace,
      body: { metadata: { name } },
      dryRun: 'All',
    });
  /** Refuses writing the TaskRun's Secret, as admission would, until the returned lift runs. */
  const refuseSecretOf = (taskRun: string, reason: 'Forbidden' | 'Invalid', message: string) => {
    const probe = `${reason.toLowerCase()}-probe`; // in force once a dry run of it is refused
    return refuse(
      pool.scope.kube.kc,
      {
        apiGroup: '',
        resource: 'secrets',
        operations: ['CREATE', 'UPDATE'],
        namespace: pool.scope.namespace,
        names: [secretNameFor(taskRun), probe],
        reason,
        message,
      },
      () => dryRunCreateSecret(probe),
    );
  };

  it('a TaskRun whose labels are refused is still served, and says the labels could not be written: on a host and locally', async () => {
    const { scope } = pool;
    await scope.taskRuns.create({ name: 'label-probe', platform: 'none/none', mountSecret: false });
    const lift = await refuse(
      scope.kube.kc,
      {
        apiGroup: 'tekton.dev',
        resource: 'taskruns',
        operations: ['UPDATE'],
        namespace: scope.namespace,
        names: ['no-labels', 'no-labels-local', 'label-probe'],
        reason: 'Invalid',
        message: 'labels are managed by the cluster admin here',
      },
      () => dryRunPatchTaskRun('label-probe'),
    );
    try {
      const tr = await scope.taskRuns.create({ name: 'no-labels', platform: pool.platform });
      const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
      expect(secret.otp).toBeDefined();
      expect((await eventNamed(tr.uid, 'MetadataNotWritten')).message).toMatch(
        /labels are managed by the cluster admin here/,
      );
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);

      // served on the cluster itself, in the one call that resolves its platform
      const local = await scope.taskRuns.create({ name: 'no-labels-local', platform: 'local' });
      expect(await scope.taskRuns.waitForSecret(local.name, 60_000)).toEqual({ host: 'localhost' });
      expect((await eventNamed(local.uid, 'MetadataNotWritten')).message).toMatch(
        /labels are managed by the cluster admin here/,
      );
      await scope.taskRuns.complete(local.name);
      await scope.taskRuns.waitForSecretGone(local.name);
    } finally {
      await lift();
    }
    await expectPlatformUntouched();
  });

  it('a Secret write that is forbidden is answered within a bounded time, blaming no host and holding nothing', async () => {
    const { scope, hosts } = pool;
    const name = 'forbidden-secret';
    const lift = await refuseSecretOf(
      name,
      'Forbidden',
      'the worker may not write this Secret yet',
    );
    try {
      const tr = await scope.taskRuns.create({ name, platform: pool.platform });
      // Not waited out while the slot is held: the error Secret is refused as well, so the
      // answer is a Warning Event, and the slot goes back while the TaskRun still exists.
      const warning = await eventNamed(tr.uid, 'CannotServe');
      expect(warning.message).toMatch(/cannot be written .*may not write this Secret yet/);
      expect(await scope.taskRuns.secret(name)).toBeUndefined();
      expect(await failedHostsOf(name)).toBeUndefined();
      for (const host of hosts) expect(await pool.buildUsers(host)).toEqual([]);
      await expectPlatformUntouched();
      await scope.taskRuns.complete(name);
    } finally {
      await lift();
    }
  });

  it('where no Secret at all can be written, the TaskRun gets a Warning Event and the host is left alone', async () => {
    const { scope, hosts } = pool;
    const name = 'no-secret-at-all';
    const lift = await refuseSecretOf(
      name,
      'Invalid',
      'Secrets of this name are refused by policy',
    );
    try {
      const tr = await scope.taskRuns.create({ name, platform: pool.platform });
      const warning = await eventNamed(tr.uid, 'CannotServe');
      expect(warning.message).toMatch(/refused by policy/);
      expect(warning.message).toContain(WORKFLOW_ID.taskRun(scope.namespace, name, tr.uid));
      await scope.taskRuns.complete(name);
      const handle = scope.temporal.client.workflow.getHandle(
        WORKFLOW_ID.taskRun(scope.namespace, name, tr.uid),
      );
      await waitFor('its workflow to clean up and end', async () =>
        (await handle.describe()).status.name === 'COMPLETED' ? true : undefined,
      );
      for (const host of hosts) expect(await pool.buildUsers(host)).toEqual([]);
    } finally {
      await lift();
    }
    await expectPlatformUntouched();
  });
});

describe('the OTP service rotating its store token and CA', () => {
  it('keeps serving: the worker follows the new token, and builds get the new CA', async () => {
    const { scope, otp } = pool;
    const dir = mkdtempSync(join(testEnv('stateDir'), 'rotated-'));
    const ca = await ensureCa(join(dir, 'pki'), 'hostflow OTP CA, rotated');
    const cert = await ensureCert(ca, 'otp-server', {
      cn: 'hostflow-otp',
      ips: ['127.0.0.1'],
      dns: ['localhost'],
    });
    const newCa = readFileSync(ca.cert, 'utf8');
    // As an operator rolls it out: clients trust both CAs first, then the server switches.
    writeFileSync(otp.files.caCert, `${readFileSync(otp.files.caCert, 'utf8')}${newCa}`);
    copyFileSync(cert.key, otp.files.tlsKey);
    copyFileSync(cert.cert, otp.files.tlsCert);
    writeFileSync(otp.files.storeToken, `${randomBytes(32).toString('base64url')}\n`);
    const port = Number(new URL(otp.url).port);
    await waitFor(
      'the OTP service to serve the new certificate',
      () =>
        new Promise<true | undefined>((resolve) => {
          const socket = connect({ host: '127.0.0.1', port, ca: newCa }, () => {
            socket.end();
            resolve(true);
          });
          socket.on('error', () => resolve(undefined));
        }),
    );

    const tr = await scope.taskRuns.create({ name: 'after-rotation', platform: pool.platform });
    const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
    expect(secret['otp-ca']).toContain(newCa.trim());
    expect(await failedHostsOf(tr.name)).toBeUndefined();
    const build = mkdtempSync(join(dir, 'build-'));
    for (const key of ['otp', 'otp-ca', 'otp-server'])
      writeFileSync(join(build, key), secret[key]!);
    expect((await redeemWithCurl(build)).exitCode).toBe(0);
    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);
    await expectPlatformUntouched();
  });
});
