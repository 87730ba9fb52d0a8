// A hostile tenant against the smaller leaks (issue 24, item 8), on the real stack:
//   - bootstrap data whose #cloud-config is malformed: no line of it reaches the workflow
//     history, the Machine's status, its Events or the engine's logs;
//   - a Lock that claims to be the engine's (spec.owner, the managed-by label): refused, and an
//     owner alone exempts no one;
//   - a Node Lock on the local cluster as `npm start` builds it: enforced (its namespace opted
//     in), and kubectl's user is not the engine, so an uncordon mid-drain is refused.
// The OTP endpoint hammered by one client is in test/otp-server.test.ts ('a client hammering').
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
} from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLockActivities } from '../../locks/adapter.js';
import { LockStatusWriter } from '../../locks/status.js';
import {
  LOCAL_ENGINE_USER,
  startKubeApiServer,
  type KubeApiServer,
} from '../../local-stack/kube-apiserver.js';
import { waitFor } from '../../local-stack/process.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import {
  CLUSTER_LOCKS_NAMESPACE,
  LOCK_API,
  LOCK_MANAGED_BY,
  LOCKABLE_LABEL,
} from '../../locks/api.js';
import { CONDITION } from '../../shared/machine-api.js';
import { apiAnswer } from '../support/api-answer.js';
import { testEnv, uniqueSuffix } from '../support/env.js';
import { historyText } from '../support/history-text.js';
import { Machines } from '../support/machines.js';
import { tenantIdentity } from '../support/service-account.js';
import { createStaticPool, type StaticPool } from '../support/static-pool.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

describe('a hostile tenant against the smaller leaks', () => {
  let pool: StaticPool;
  let machines: Machines;

  beforeAll(async () => {
    pool = await createStaticPool('leaks', 1);
    await pool.scope.setHostConfig(
      pool.hostEntries([{ host: 0, concurrency: 1, serves: 'machines' }]),
    );
    machines = new Machines(pool.scope);
  }, 120_000);

  afterAll(async () => {
    machines?.stopWatches();
    await pool?.dispose();
  });

  const ns = () => pool.scope.namespace;

  it('gets no line of malformed #cloud-config bootstrap data quoted in history, status, Events or logs', async () => {
    const marker = `LEAKMARK${uniqueSuffix()}`;
    // A join token on a line the YAML parser stops at (a nested mapping in a compact one).
    const data = `#cloud-config\nwrite_files:\n  - path: /etc/join\n    content: ${marker}: token: ${marker}\n`;
    await machines.bootstrapSecret('bad-yaml-bootstrap', data);
    await machines.create('bad-yaml', { platform: pool.platform });
    const failed = await machines.untilInfrastructure('bad-yaml', 'to fail for its data', (m) =>
      /not valid YAML/.test(machines.condition(m, CONDITION.ready)?.message ?? ''),
    );
    // Actionable without the content: the Secret, the kind of error and where.
    expect(machines.condition(failed, CONDITION.ready)?.message).toMatch(
      new RegExp(`Secret ${ns()}/bad-yaml-bootstrap: .*not valid YAML: .* at line 4, column \\d+`),
    );
    // Its own status, and the Machine's, where Cluster API core mirrors it.
    const status = JSON.stringify([failed.status, (await machines.get('bad-yaml'))?.status]);
    const events = JSON.stringify(
      (await pool.scope.kube.core.listNamespacedEvent({ namespace: ns() })).items,
    );
    const history = await historyText(
      pool.scope.temporal.client,
      WORKFLOW_ID.hostflowMachine(ns(), 'bad-yaml'),
    );
    const logs = ['worker', 'bridge']
      .map((kind) => readFileSync(join(testEnv('stateDir'), 'logs', `${kind}-${ns()}.log`), 'utf8'))
      .join('\n');
    expect(history).toMatch(/not valid YAML/); // the error did reach them, without the data
    for (const [where, text] of Object.entries({ status, events, history, logs }))
      expect({ where, quotes: text.includes(marker) }).toEqual({ where, quotes: false });
  }, 120_000);

  it("may not write a Lock that passes for the engine's, and an owner alone exempts no one", async () => {
    // The tenant's namespace opts in to Locks, as it may.
    await pool.scope.kube.core.patchNamespace(
      {
        name: ns(),
        body: { metadata: { labels: { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value } } },
      },
      MERGE_PATCH,
    );
    const tenant = (
      await tenantIdentity(pool.scope.kube.kc, ns(), [
        {
          apiGroups: ['kotas.tech'],
          resources: ['locks'],
          verbs: ['create', 'update', 'patch', 'get'],
        },
      ])
    ).makeApiClient(CustomObjectsApi);
    const lock = (name: string, spec: object, labels?: Record<string, string>) => ({
      ...LOCK_API,
      namespace: ns(),
      body: {
        apiVersion: 'kotas.tech/v1',
        kind: 'Lock',
        metadata: { name, ...(labels ? { labels } : {}) },
        spec,
      },
    });
    const forged = /^403: .*only the hostflow engine may set or change spec\.owner/;
    // An owner, or the engine's label: refused; a Lock of its own: fine.
    expect(
      await apiAnswer(tenant.createNamespacedCustomObject(lock('cm-a', { owner: 'wf-x' }))),
    ).toMatch(forged);
    expect(
      await apiAnswer(
        tenant.createNamespacedCustomObject(
          lock('cm-a', { reason: 'mine' }, { [LOCK_MANAGED_BY.key]: LOCK_MANAGED_BY.value }),
        ),
      ),
    ).toMatch(forged);
    await tenant.createNamespacedCustomObject(lock('cm-a', { reason: 'mine' }));
    // Nor may it give its Lock an owner later.
    expect(
      await apiAnswer(
        tenant.patchNamespacedCustomObject(
          { ...LOCK_API, namespace: ns(), name: 'cm-a', body: { spec: { owner: 'wf-x' } } },
          MERGE_PATCH,
        ),
      ),
    ).toMatch(forged);

    // A Lock with an owner but not made by the engine (no managed-by label; written here by
    // the engine's identity, as a tenant could have before) holds against the engine too.
    const { core, custom } = pool.scope.kube; // the tests' engine identity
    await core.createNamespacedConfigMap({ namespace: ns(), body: { metadata: { name: 'cm-b' } } });
    await custom.createNamespacedCustomObject(lock('cm-b', { owner: 'wf-y', reason: 'kept' }));
    // The API server sees new Locks a moment later, in order: once a plain Lock written after
    // it holds, so would cm-b's.
    await core.createNamespacedConfigMap({ namespace: ns(), body: { metadata: { name: 'cm-c' } } });
    await custom.createNamespacedCustomObject(lock('cm-c', { reason: 'a later Lock' }));
    const deleteDry = (name: string) =>
      apiAnswer(core.deleteNamespacedConfigMap({ namespace: ns(), name, dryRun: 'All' }));
    await waitFor('the later Lock to hold', async () =>
      (await deleteDry('cm-c')).startsWith('403') ? true : undefined,
    );
    expect(await deleteDry('cm-b')).toMatch(/^403: .*configmaps .*cm-b is locked by Lock/);
    for (const name of ['cm-b', 'cm-c'])
      await custom.deleteNamespacedCustomObject({ ...LOCK_API, namespace: ns(), name });
    await custom.deleteNamespacedCustomObject({ ...LOCK_API, namespace: ns(), name: 'cm-a' });
    for (const name of ['cm-b', 'cm-c'])
      await core.deleteNamespacedConfigMap({ namespace: ns(), name });
  }, 60_000);
});

describe('a Node Lock on the local cluster as npm start builds it', () => {
  let kube: KubeApiServer;
  beforeAll(async () => {
    const logDir = join(testEnv('stateDir'), 'logs', 'npm-start-kube');
    mkdirSync(logDir, { recursive: true });
    kube = await startKubeApiServer({
      stateDir: mkdtempSync(join(tmpdir(), 'hostflow-leaks-kube-')),
      logDir,
      ephemeral: true,
      resourcesFor: LOCAL_ENGINE_USER, // as cli/start.ts does
    });
  }, 180_000);
  afterAll(async () => {
    await kube?.stop();
  });

  it('is enforced, and refuses kubectl an uncordon mid-drain while the engine may still cordon', async () => {
    const admin = new KubeConfig(); // kubectl's, as the banner of npm start says
    admin.loadFromFile(kube.kubeconfigPath);
    const engine = new KubeConfig(); // the worker's and the bridge's
    engine.loadFromFile(kube.engineKubeconfigPath);
    const kubectl = admin.makeApiClient(CoreV1Api);
    await kubectl.createNode({ body: { metadata: { name: 'worker-1' } } });
    // The Lock a Machine's drain takes, through the engine's own activity and identity.
    const custom = engine.makeApiClient(CustomObjectsApi);
    const locks = createLockActivities({ custom, engineNamespace: 'multi-platform-controller' });
    const take = () =>
      locks.syncLocks({
        holder: 'machine/tenant/m1',
        wanted: [
          {
            namespace: CLUSTER_LOCKS_NAMESPACE,
            name: 'worker-1',
            resource: 'nodes',
            apiGroup: '',
            operations: ['UPDATE', 'DELETE'],
            reason: 'Machine tenant/m1 drains and deletes it',
          },
        ],
      });
    // A fresh API server serves the Lock CRD a moment after it is established.
    await waitFor('the engine to take the Node Lock', () =>
      take().then(
        () => true,
        () => undefined,
      ),
    );
    const status = new LockStatusWriter({
      custom,
      core: engine.makeApiClient(CoreV1Api),
      admission: engine.makeApiClient(AdmissionregistrationV1Api),
    });
    await status.reconcile({ metadata: { name: 'worker-1', namespace: CLUSTER_LOCKS_NAMESPACE } });
    const written = (await custom.getNamespacedCustomObject({
      ...LOCK_API,
      namespace: CLUSTER_LOCKS_NAMESPACE,
      name: 'worker-1',
    })) as { status?: { conditions?: Array<{ type: string; status: string }> } };
    expect(written.status?.conditions?.find((c) => c.type === 'Enforced')?.status).toBe('True');

    // kubectl uncordon --dry-run=server, and kubectl delete node --dry-run=server.
    const uncordon = { spec: { unschedulable: false } };
    const refused = /^403: .*nodes worker-1 is locked by Lock cluster-locks\/worker-1/;
    const tryUncordon = () =>
      apiAnswer(
        kubectl.patchNode({ name: 'worker-1', body: uncordon, dryRun: 'All' }, MERGE_PATCH),
      );
    // A policy binding made a moment ago reaches the API server's admission a little later.
    await waitFor('the uncordon to be refused', async () =>
      refused.test(await tryUncordon()) ? true : undefined,
    ).catch(() => undefined);
    expect(await tryUncordon()).toMatch(refused);
    expect(await apiAnswer(kubectl.deleteNode({ name: 'worker-1', dryRun: 'All' }))).toMatch(
      refused,
    );
    // The engine, which holds it, still cordons and deletes what it drains.
    const cordon = { spec: { unschedulable: true } };
    await engine
      .makeApiClient(CoreV1Api)
      .patchNode({ name: 'worker-1', body: cordon, dryRun: 'All' }, MERGE_PATCH);
  }, 180_000);
});
