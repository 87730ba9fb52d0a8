// Every wait ends: a tenant namespace that refuses the build's Secret (a ResourceQuota with no
// room, an admission policy) is answered within a bounded time, with nothing held and nothing made
// again and again; a TaskRun deleted while its workflow retries stops the retries; a TaskRun
// workflow continues as new before its history limit and still serves and cleans up.
// Real components: the API server's own quota and admission plugins, a webhook that cannot be
// reached (as a broken one in a real cluster); the quota's usage is written by the test (below).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { freePort } from '../../local-stack/ports.js';
import { waitFor } from '../../local-stack/process.js';
import { secretNameFor } from '../../platform-config/contract.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { statusCode } from '../../shared/kube-errors.js';
import { taskRunStatus } from '../../shared/contracts/taskrun.js';
import { OTP_LABEL } from '../../otp-server/store.js';
import { refuse } from '../support/refusals.js';
import { createStaticPool, type StaticPool } from '../support/static-pool.js';

let pool: StaticPool;
let admission: AdmissionregistrationV1Api;

beforeAll(async () => {
  pool = await createStaticPool('waits', 1);
  admission = pool.scope.kube.kc.makeApiClient(AdmissionregistrationV1Api);
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0, concurrency: 2 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

const tenant = () => pool.scope.namespace;

async function eventsOf(uid: string) {
  const list = await pool.scope.kube.core.listNamespacedEvent({ namespace: tenant() });
  return list.items.filter((e) => e.involvedObject.uid === uid);
}

async function event(uid: string, reason: string, timeoutMs = 90_000) {
  return waitFor(
    `a ${reason} Event`,
    async () => (await eventsOf(uid)).find((e) => e.reason === reason),
    { timeoutMs },
  );
}

/** The OTP records the OTP service holds: one per key the engine stored. */
async function otpRecords(): Promise<number> {
  const selector = Object.entries(OTP_LABEL)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const list = await pool.scope.kube.core.listNamespacedSecret({
    namespace: pool.scope.otpNamespace,
    labelSelector: selector,
  });
  return list.items.length;
}

/** A dry-run create of a Secret like the build's (with an `otp` key). */
const probeSecret = () =>
  pool.scope.kube.core.createNamespacedSecret({
    namespace: tenant(),
    dryRun: 'All',
    body: { metadata: { name: 'probe' }, stringData: { otp: 'x' } },
  });

/** Whether the API server would now admit a Secret like the build's: the refusal if not. */
async function refusal(): Promise<string | undefined> {
  try {
    await probeSecret();
    return undefined;
  } catch (err) {
    if (statusCode(err) !== 403) throw err;
    return (err as { body?: string }).body ?? 'forbidden';
  }
}

const refused = () =>
  waitFor('the API server to refuse the Secret', async () => (await refusal()) ?? undefined, {
    timeoutMs: 60_000,
  });
const admitted = () =>
  waitFor('the API server to admit the Secret', async () =>
    (await refusal()) === undefined ? true : undefined,
  );

async function noSecretRoom(): Promise<() => Promise<void>> {
  const name = 'no-secrets';
  const hard = { 'count/secrets': '0' };
  await pool.scope.kube.core.createNamespacedResourceQuota({
    namespace: tenant(),
    body: { metadata: { name }, spec: { hard } },
  });
  // Stand-in for the resourcequota controller, which the shared stack does not run (its
  // discovery delays the garbage collector's that other files rely on): the usage it would count
  // here. The API server's own quota admission does the rest.
  await pool.scope.kube.core.replaceNamespacedResourceQuotaStatus({
    name,
    namespace: tenant(),
    body: { metadata: { name }, spec: { hard }, status: { hard, used: { 'count/secrets': '0' } } },
  });
  expect(await refused()).toMatch(/exceeded quota/);
  return async () => {
    await pool.scope.kube.core.deleteNamespacedResourceQuota({ name, namespace: tenant() });
    await admitted();
  };
}

const slotsInUse = async () => (await pool.allocator()).inUse;

describe('a hostile tenant whose namespace refuses the build Secret', () => {
  it('a ResourceQuota with no room: answered within the bound, with nothing held or made', async () => {
    const { scope, hosts } = pool;
    const lift = await noSecretRoom();
    try {
      const tr = await scope.taskRuns.create({ name: 'quota-full', platform: pool.platform });
      // A quota may clear: waited for a few times, then answered. The Secret cannot carry the
      // answer (the quota refuses it too), so the TaskRun gets a Warning Event.
      const delayed = await event(tr.uid, 'DeliveryDelayed');
      expect(delayed.message).toMatch(/exceeded quota/);
      const answer = await event(tr.uid, 'CannotServe');
      expect(answer.type).toBe('Warning');
      expect(answer.message).toMatch(
        new RegExp(`Secret ${secretNameFor(tr.name)} cannot be written .*exceeded quota`),
      );
      // Nothing was made for it (the Secret was asked about first) and nothing is held while
      // the TaskRun still exists: no build user, no OTP record, no slot.
      expect(await otpRecords()).toBe(0);
      expect(await pool.buildUsers(hosts[0]!)).toEqual([]);
      expect(await slotsInUse()).toBe(0);
      expect(await scope.taskRuns.secret(tr.name)).toBeUndefined();
      await scope.taskRuns.complete(tr.name);
      await waitFor('its workflow to finish', async () => {
        const handle = scope.temporal.client.workflow.getHandle(
          WORKFLOW_ID.taskRun(tenant(), tr.name, tr.uid),
        );
        return (await handle.describe()).status.name === 'COMPLETED' ? true : undefined;
      });
    } finally {
      await lift();
    }
  });

  it('a quota that clears within the bound: served, with one build user and one OTP record', async () => {
    const { scope, hosts } = pool;
    const lift = await noSecretRoom();
    let lifted = false;
    try {
      const tr = await scope.taskRuns.create({ name: 'quota-clears', platform: pool.platform });
      await event(tr.uid, 'DeliveryDelayed');
      await lift();
      lifted = true;
      const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
      const user = secret.host!.split('@')[0]!;
      expect(await pool.buildUsers(hosts[0]!)).toEqual([user]);
      expect(await otpRecords()).toBe(1);
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);
      expect(await pool.buildUsers(hosts[0]!)).toEqual([]);
    } finally {
      if (!lifted) await lift();
    }
  });

  it('an admission policy denying it: an error Secret at once, with nothing held or made', async () => {
    const { scope, hosts } = pool;
    const before = await otpRecords();
    const lift = await refuse(
      scope.kube.kc,
      {
        apiGroup: '',
        resource: 'secrets',
        operations: ['CREATE', 'UPDATE'],
        namespace: tenant(),
        picks: "has(object.data) && 'otp' in object.data",
        reason: 'Forbidden',
        message: 'this namespace takes no one-time passwords',
      },
      probeSecret,
    );
    try {
      expect(await refused()).toMatch(/one-time passwords/);
      const tr = await scope.taskRuns.create({ name: 'denied', platform: pool.platform });
      const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
      expect(Object.keys(secret)).toEqual(['error']);
      expect(secret.error).toMatch(/cannot be written .*one-time passwords/);
      expect(await otpRecords()).toBe(before);
      expect(await pool.buildUsers(hosts[0]!)).toEqual([]);
      expect(await slotsInUse()).toBe(0);
      // Denied for good: not tried again and again.
      expect((await eventsOf(tr.uid)).filter((e) => e.reason === 'DeliveryDelayed')).toEqual([]);
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);
    } finally {
      await lift();
      await admitted();
    }
  });
});

describe('a TaskRun deleted while its workflow retries', () => {
  it('stops the retries and cleans up', async () => {
    const { scope } = pool;
    // A webhook nobody answers (as a broken one in a real cluster): every Secret the tenant's
    // namespace is to get fails with a 500, which is retried.
    const name = `unreachable-${tenant()}`;
    const port = await freePort();
    await admission.createValidatingWebhookConfiguration({
      body: {
        metadata: { name },
        webhooks: [
          {
            name: 'unreachable.hostflow.test',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Fail',
            timeoutSeconds: 2,
            clientConfig: { url: `https://127.0.0.1:${port}/validate` },
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': tenant() } },
            rules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE'],
                resources: ['secrets'],
              },
            ],
          },
        ],
      },
    });
    try {
      await waitFor('the webhook to refuse Secrets', async () => {
        try {
          await refusal();
          return undefined;
        } catch (err) {
          return statusCode(err) === 500 ? true : undefined;
        }
      });
      const tr = await scope.taskRuns.create({ name: 'deleted-retrying', platform: 'local' });
      const handle = scope.temporal.client.workflow.getHandle(
        WORKFLOW_ID.taskRun(tenant(), tr.name, tr.uid),
      );
      await waitFor('its workflow to retry writing the Secret', async () => {
        const meta = (await handle.query('__temporal_workflow_metadata')) as {
          currentDetails?: string;
        };
        // answered as its platform is resolved (patch taskrun-local-answered-on-resolve)
        return /cannot read host-config and write its Secret yet \(try [2-9]/.test(
          meta.currentDetails ?? '',
        )
          ? true
          : undefined;
      });
      await scope.taskRuns.delete(tr.name);
      await waitFor('its workflow to stop retrying and finish', async () =>
        (await handle.describe()).status.name === 'COMPLETED' ? true : undefined,
      );
      expect(await handle.result()).toEqual({
        served: 'nothing',
        reason: 'the TaskRun ended before it was served',
      });
    } finally {
      await admission.deleteValidatingWebhookConfiguration({ name });
    }
  });
});

describe('a TaskRun workflow at its history limit', () => {
  it('continues as new while it waits and after it is served, and still cleans up', async () => {
    const { scope, hosts } = pool;
    await pool.restartBridgeWith({ HOSTFLOW_TASKRUN_MAX_HISTORY: '10' });
    await pool.killOtp(); // the delivery waits for the OTP service: a wait on workflow timers
    let otpUp = false;
    try {
      const tr = await scope.taskRuns.create({ name: 'long-wait', platform: pool.platform });
      const workflowId = WORKFLOW_ID.taskRun(tenant(), tr.name, tr.uid);
      const continued = async () =>
        (
          await scope.temporal.client.workflow.count(
            `WorkflowId = '${workflowId}' AND ExecutionStatus = 'ContinuedAsNew'`,
          )
        ).count;
      await event(tr.uid, 'DeliveryDelayed');
      await waitFor('a run to continue as new while it waits', async () =>
        (await continued()) > 0 ? true : undefined,
      );
      await pool.startOtp();
      otpUp = true;
      const secret = await scope.taskRuns.waitForSecret(tr.name, 90_000);
      const user = secret.host!.split('@')[0]!;
      expect(await pool.buildUsers(hosts[0]!)).toEqual([user]);
      // Served, it waits for the build to end; its history grows only with what reaches it. A
      // bridge's relist resends every TaskRun, which takes the run past its limit of 10: it
      // continues as new, carrying what it holds.
      await pool.restartBridgeWith({ HOSTFLOW_TASKRUN_MAX_HISTORY: '10' });
      const handle = scope.temporal.client.workflow.getHandle(workflowId);
      await waitFor('a continued run that waits for the build to end', async () => {
        const { events } = await handle.fetchHistory();
        const started = events?.[0]?.workflowExecutionStartedEventAttributes;
        const delivers = events?.some(
          (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverBuildUser',
        );
        return started?.continuedExecutionRunId && !delivers ? true : undefined;
      });
      expect(await handle.query(taskRunStatus)).toMatchObject({ phase: 'Ready', user });
      expect(await slotsInUse()).toBe(1);
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);
      await waitFor('its last run to finish', async () =>
        (await handle.describe()).status.name === 'COMPLETED' ? true : undefined,
      );
      expect(await pool.buildUsers(hosts[0]!)).toEqual([]);
      expect(await slotsInUse()).toBe(0);
    } finally {
      if (!otpUp) await pool.startOtp();
    }
  });
});
