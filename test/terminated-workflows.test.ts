// Nothing leaks when an operator terminates a TaskRun's workflow by hand (docs/architecture.md, "Nothing leaks when a workflow is terminated by hand"):
// within the resync period (5 s here) the bridge starts a new run, which takes over the build
// its predecessor served without touching its key; slots, build users and Secrets left by runs
// that nobody takes over are reclaimed by the allocator's sweep and garbage collection, as are
// the Locks of an allocator terminated while it held them. And a
// TaskRun re-created under the same name never shares a build user with its predecessor.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../local-stack/process.js';
import type { CoreV1Api } from '@kubernetes/client-node';
import { createKubernetesActivities } from '../activities/kubernetes/taskruns.js';
import { ANNOTATIONS, secretNameFor } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { statusCode } from '../shared/kube-errors.js';
import { LOCK_API } from '../locks/api.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { testEnv } from './support/env.js';
import { historyText } from './support/history-text.js';
import { redeemWithCurl } from './support/otp.js';
import { sshCommand } from './support/ssh.js';
import { createStaticPool, SHORT_GC_PERIODS, type StaticPool } from './support/static-pool.js';

let pool: StaticPool;

beforeAll(async () => {
  pool = await createStaticPool('terminated', 2, {
    worker: SHORT_GC_PERIODS,
    bridge: SHORT_GC_PERIODS,
  });
  await pool.scope.setHostConfig(
    pool.hostEntries([
      { host: 0, concurrency: 1 },
      { host: 1, concurrency: 1 },
    ]),
  );
});

afterAll(async () => {
  await pool?.dispose();
});

const workflowOf = (name: string, uid: string) =>
  pool.scope.temporal.client.workflow.getHandle(
    WORKFLOW_ID.taskRun(pool.scope.namespace, name, uid),
  );

/** Redeems the Secret's OTP as a build would, returning the key and where to log in. */
async function redeem(secret: Record<string, string>) {
  const dir = mkdtempSync(join(testEnv('stateDir'), 'build-'));
  for (const key of ['otp', 'otp-ca', 'otp-server']) writeFileSync(join(dir, key), secret[key]!);
  expect((await redeemWithCurl(dir)).exitCode).toBe(0);
  const [user, address] = secret.host!.split('@') as [string, string];
  return { user, address, privateKey: readFileSync(join(dir, 'id_rsa'), 'utf8') };
}

/** Waits until garbage collection has finished `count` passes that began after `since`. */
async function gcPassesSince(since: number, count: number): Promise<void> {
  const gc = pool.scope.temporal.client.workflow.getHandle(
    WORKFLOW_ID.taskRunGc(pool.scope.engineNamespace),
  );
  await waitFor(
    `${count} garbage collection passes`,
    async () => {
      const { events } = await gc.fetchHistory();
      const scheduled = new Set<string>();
      let done = 0;
      for (const event of events ?? []) {
        const at = Number(String(event.eventTime?.seconds ?? 0)) * 1000;
        if (event.activityTaskScheduledEventAttributes && at > since) {
          scheduled.add(String(event.eventId));
        }
        const completed = event.activityTaskCompletedEventAttributes;
        if (completed && scheduled.has(String(completed.scheduledEventId))) done += 1;
      }
      return done >= count ? true : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

async function allUsers(): Promise<string[]> {
  return (await Promise.all(pool.hosts.map((h) => pool.buildUsers(h)))).flat();
}

describe('a served TaskRun whose workflow is terminated', () => {
  it('is taken over by a new run: the build keeps its key, and clean-up still happens', async () => {
    const { scope } = pool;
    const tr = await scope.taskRuns.create({
      name: 'served-then-terminated',
      platform: pool.platform,
    });
    const login = await redeem(await scope.taskRuns.waitForSecret(tr.name, 30_000));
    const handle = workflowOf(tr.name, tr.uid);
    const first = (await handle.describe()).runId;
    // Until the bridge starts a new run, no workflow holds the build: garbage collection must
    // still leave its user alone, since the TaskRun has not finished.
    await pool.stopBridge();
    await handle.terminate('test: an operator ends the workflow');
    await gcPassesSince(Date.now(), 2);
    expect(await allUsers()).toEqual([login.user]);
    await pool.startBridge();

    await waitFor(
      'a new run to take the build over',
      async () => {
        const now = await handle.describe();
        return now.runId !== first && now.status.name === 'RUNNING' ? now : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const adopted = await waitFor('the BuildAdopted Event', async () => {
      const events = await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace });
      return events.items.find(
        (e) => e.involvedObject.uid === tr.uid && e.reason === 'BuildAdopted',
      );
    });
    expect(adopted.message).toContain(first);
    // The key the build redeemed before still works: nothing was delivered again.
    const still = await sshCommand({ ...login }, 'whoami');
    expect(still.stdout.trim()).toBe(login.user);
    expect(await allUsers()).toEqual([login.user]);
    const view = await pool.allocator();
    expect(view.inUse).toBe(1);

    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name);
    expect(await allUsers()).toEqual([]);
    await waitFor('its slot free', async () =>
      (await pool.allocator()).inUse === 0 ? true : undefined,
    );
  });

  it('is cleaned up by the sweep and garbage collection when its TaskRun is deleted too', async () => {
    const { scope } = pool;
    await untilGarbageCollectorKnowsTaskRuns();
    const tr = await scope.taskRuns.create({
      name: 'terminated-and-deleted',
      platform: pool.platform,
    });
    await scope.taskRuns.waitForSecret(tr.name, 30_000);
    expect(await allUsers()).toHaveLength(1);
    await workflowOf(tr.name, tr.uid).terminate('test: an operator ends the workflow');
    // No new run: nothing is left to serve. Deleted as `kubectl delete --cascade=orphan` does,
    // so the Secret is the engine's garbage collection's to find, not Kubernetes' (which would
    // otherwise delete it with its owner, first or not).
    await scope.kube.custom.deleteNamespacedCustomObject({
      ...TASKRUN_API,
      namespace: scope.namespace,
      name: tr.name,
      propagationPolicy: 'Orphan',
    });
    const t0 = Date.now();
    await waitFor(
      'the slot swept',
      async () => ((await pool.allocator()).inUse === 0 ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    await waitFor(
      'the build user collected',
      async () => ((await allUsers()).length === 0 ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    await scope.taskRuns.waitForSecretGone(tr.name, 30_000);
    console.log(`slot, build user and Secret reclaimed ${Date.now() - t0} ms after the deletion`);
    const events = await scope.kube.core.listNamespacedEvent({ namespace: scope.engineNamespace });
    expect(events.items.some((e) => e.reason === 'OrphanUserCollected')).toBe(true);
    expect(events.items.some((e) => e.reason === 'OrphanSecretCollected')).toBe(true);
  });
});

/**
 * Kubernetes' garbage collector learns a CRD made after it started on its next discovery (up to
 * 30 s). Until then an orphan-deleted TaskRun keeps its `orphan` finalizer and stays, and the
 * bridge, seeing it, runs its workflow again: the clean-up under test would never be needed. A
 * probe TaskRun (served locally, no host) deleted the same way shows when it knows them.
 */
async function untilGarbageCollectorKnowsTaskRuns(): Promise<void> {
  const { scope } = pool;
  const probe = await scope.taskRuns.create({ name: 'gc-probe', platform: 'local' });
  await scope.kube.custom.deleteNamespacedCustomObject({
    ...TASKRUN_API,
    namespace: scope.namespace,
    name: probe.name,
    propagationPolicy: 'Orphan',
  });
  await waitFor(
    'the garbage collector to finish an orphan deletion of a TaskRun',
    () =>
      scope.kube.custom
        .getNamespacedCustomObject({ ...TASKRUN_API, namespace: scope.namespace, name: probe.name })
        .then(
          () => undefined,
          (err: unknown) => (statusCode(err) === 404 ? true : Promise.reject(err)),
        ),
    { timeoutMs: 60_000 },
  );
}

describe('a waiting TaskRun whose workflow is terminated', () => {
  it('is served by the new run once a slot frees', async () => {
    const { scope } = pool;
    const holders = ['holder-1', 'holder-2'];
    for (const name of holders) {
      await scope.taskRuns.create({ name, platform: pool.platform });
      await scope.taskRuns.waitForSecret(name, 30_000);
    }
    const waiter = await scope.taskRuns.create({ name: 'waiter', platform: pool.platform });
    await waitFor('the waiter in line', async () =>
      (await pool.allocator()).queue.length === 1 ? true : undefined,
    );
    const handle = workflowOf(waiter.name, waiter.uid);
    const first = (await handle.describe()).runId;
    await handle.terminate('test: an operator ends the workflow');
    await waitFor('a new run of the waiter', async () => {
      const now = await handle.describe();
      return now.runId !== first && now.status.name === 'RUNNING' ? true : undefined;
    });
    await waitFor('only the new run in line', async () => {
      const { queue } = await pool.allocator();
      return queue.length === 1 && !queue[0]!.includes(first) ? true : undefined;
    });
    await scope.taskRuns.complete('holder-1');
    expect((await scope.taskRuns.waitForSecret(waiter.name, 30_000)).otp).toBeDefined();
    for (const name of ['holder-2', waiter.name]) await scope.taskRuns.complete(name);
    for (const name of [...holders, waiter.name]) await scope.taskRuns.waitForSecretGone(name);
    expect(await allUsers()).toEqual([]);
  });
});

describe('a TaskRun re-created under the same name', () => {
  it("gets a build user of its own, which its predecessor's clean-up leaves alone", async () => {
    const { scope } = pool;
    const name = 'same-name';
    await scope.taskRuns.create({ name, platform: pool.platform });
    const before = await redeem(await scope.taskRuns.waitForSecret(name, 30_000));
    await scope.taskRuns.delete(name);
    const again = await scope.taskRuns.create({ name, platform: pool.platform });
    const after = await waitFor(
      'the new TaskRun served',
      async () => {
        const secret = await scope.taskRuns.secret(name);
        if (!secret?.metadata?.annotations || !secret.data?.otp) return undefined;
        return secret.metadata.annotations['hostflow.dev/taskrun-uid'] === again.uid
          ? secret
          : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const login = await redeem(
      Object.fromEntries(
        Object.entries(after.data!).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      ),
    );
    expect(login.user).not.toBe(before.user);
    // the predecessor's clean-up has run (its user is gone) and left the new user working
    await waitFor('the old user removed', async () =>
      (await allUsers()).includes(before.user) ? undefined : true,
    );
    expect((await sshCommand({ ...login }, 'whoami')).stdout.trim()).toBe(login.user);
    await scope.taskRuns.complete(name);
    await scope.taskRuns.waitForSecretGone(name);
    expect(await allUsers()).toEqual([]);
  });

  // The race above, made certain: the successor's write lands between the predecessor's
  // read and its delete, or the predecessor's delete between the successor's create and replace.
  // Real API server; only the moment of the other workflow's call is chosen by the test. The
  // TaskRuns are real too, since the garbage collector deletes a Secret whose owner does not
  // exist: the predecessor is deleted as `kubectl delete --cascade=orphan` does, so its Secret
  // stays (no longer owned) for its own clean-up and its successor's write to meet. Neither
  // TaskRun has a PLATFORM, so no workflow of the engine's touches them.
  describe("the two workflows' calls on the one Secret, interleaved", () => {
    const name = 'interleaved';
    const secretName = secretNameFor(name);
    const ref = (uid: string) => ({ namespace: pool.scope.namespace, name, uid });
    const ownerOf = async () =>
      (
        await pool.scope.kube.core.readNamespacedSecret({
          name: secretName,
          namespace: pool.scope.namespace,
        })
      ).metadata?.annotations?.[ANNOTATIONS.ownerUid];
    const adapter = (core: CoreV1Api) =>
      createKubernetesActivities({ core, custom: pool.scope.kube.custom, engineNamespace: '-' });
    const createTaskRun = async () => (await pool.scope.taskRuns.create({ name })).uid;
    const taskRunGone = (propagationPolicy: 'Orphan' | 'Background') => async () => {
      const { kube, namespace } = pool.scope;
      await kube.custom.deleteNamespacedCustomObject({
        ...TASKRUN_API,
        namespace,
        name,
        propagationPolicy,
      });
      await waitFor(`TaskRun ${name} to be deleted`, () =>
        pool.scope.taskRuns.get(name).then(
          () => undefined,
          (err: unknown) => (statusCode(err) === 404 ? true : Promise.reject(err)),
        ),
      );
    };
    /** The predecessor deleted (its Secret orphaned, not collected), and its successor's uid. */
    const recreate = async () => {
      await taskRunGone('Orphan')();
      return createTaskRun();
    };
    /** The adapter whose first call of `method` lets `other` run first, as the other workflow. */
    const racedAt = (method: keyof CoreV1Api, other: () => Promise<unknown>) => {
      let raced = false;
      return adapter(
        new Proxy(pool.scope.kube.core, {
          get(target, key, receiver) {
            const real = Reflect.get(target, key, receiver) as unknown;
            if (key !== method || typeof real !== 'function') return real;
            return async (...args: unknown[]) => {
              if (!raced) {
                raced = true;
                await other();
              }
              return (real as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            };
          },
        }),
      );
    };

    it("a predecessor's delete leaves a Secret its successor took over after the read", async () => {
      const plain = adapter(pool.scope.kube.core);
      const oldUid = await createTaskRun();
      await plain.writeTaskRunSecret({ ...ref(oldUid), data: { otp: 'old' } });
      const newUid = await recreate();
      const predecessor = racedAt('deleteNamespacedSecret', () =>
        plain.writeTaskRunSecret({ ...ref(newUid), data: { otp: 'new' } }),
      );
      expect(await predecessor.deleteTaskRunSecret(ref(oldUid))).toBe('not-ours');
      expect(await ownerOf()).toBe(newUid);
      expect(await plain.deleteTaskRunSecret(ref(newUid))).toBe('deleted');
      await taskRunGone('Background')();
    });

    it("a successor's write creates the Secret again when the predecessor's clean-up deleted it", async () => {
      const plain = adapter(pool.scope.kube.core);
      const oldUid = await createTaskRun();
      await plain.writeTaskRunSecret({ ...ref(oldUid), data: { otp: 'old' } });
      const newUid = await recreate();
      const successor = racedAt('replaceNamespacedSecret', async () => {
        expect(await plain.deleteTaskRunSecret(ref(oldUid))).toBe('deleted');
      });
      expect(await successor.writeTaskRunSecret({ ...ref(newUid), data: { otp: 'new' } })).toBe(
        'written',
      );
      expect(await ownerOf()).toBe(newUid);
      expect(await plain.deleteTaskRunSecret(ref(newUid))).toBe('deleted');
      await taskRunGone('Background')();
    });
  });
});

describe('an allocator that ends while it holds a Lock', () => {
  const allocatorId = () => WORKFLOW_ID.allocator(pool.platform);

  /** A served TaskRun, and the Lock its allocator holds on the serving host's admin key. */
  async function servedUnderLock(name: string) {
    const { scope } = pool;
    const tr = await scope.taskRuns.create({ name, platform: pool.platform });
    const { address } = await redeem(await scope.taskRuns.waitForSecret(tr.name, 30_000));
    const adminKey = `admin-${pool.hosts.findIndex((host) => host.address === address)}`;
    const lock = () =>
      scope.kube.custom
        .getNamespacedCustomObject({
          ...LOCK_API,
          namespace: scope.engineNamespace,
          name: adminKey,
        })
        .then(
          (found) => found as { spec: { owner: string } },
          (err: unknown) => {
            if (statusCode(err) === 404) return undefined;
            throw err;
          },
        );
    expect((await lock())?.spec.owner).toBe(allocatorId());
    const released = () =>
      waitFor(`the Lock on ${adminKey} to be released`, async () =>
        (await lock()) === undefined ? true : undefined,
      );
    return { tr, adminKey, released };
  }

  it('has its Lock released by garbage collection within the resync period when terminated', async () => {
    const { scope } = pool;
    const { tr, adminKey, released } = await servedUnderLock('lock-orphaned');
    await scope.temporal.client.workflow
      .getHandle(allocatorId())
      .terminate('test: an operator ends the allocator');
    const t0 = Date.now();
    await released();
    console.log(`Lock of the terminated allocator released ${Date.now() - t0} ms after it ended`);
    const gc = scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.taskRunGc(scope.engineNamespace),
    );
    const details = await waitFor('the pass to be shown', async () => {
      const meta = (await gc.query('__temporal_workflow_metadata')) as { currentDetails?: string };
      const shown = meta.currentDetails ?? '';
      return shown.includes(`released Lock ${scope.engineNamespace}/${adminKey}`)
        ? shown
        : undefined;
    });
    expect(details).toContain(`of ended ${allocatorId()}`);
    await scope.taskRuns.complete(tr.name); // its slot goes back to no allocator
    await scope.taskRuns.waitForSecretGone(tr.name, 30_000);
  });

  it('releases its Locks itself, in non-cancellable clean-up, when cancelled', async () => {
    const { scope } = pool;
    const { tr, released } = await servedUnderLock('lock-cancelled');
    const allocator = scope.temporal.client.workflow.getHandle(allocatorId());
    await allocator.cancel();
    await released();
    // Let go by the allocator on its way out (the release is in its history), not left to GC.
    // The release is its last step; the run closes a moment after it.
    await waitFor('the allocator to close as cancelled', async () =>
      (await allocator.describe()).status.name === 'CANCELLED' ? true : undefined,
    );
    expect(await historyText(scope.temporal.client, allocatorId())).toContain('syncLocks');
    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name, 30_000);
  });
});
