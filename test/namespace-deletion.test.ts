// What the stack's kube-controller-manager finishes (local-stack/kube-controller-manager.ts), on
// the real API server and the real controllers, with the Lock policy of deploy/locks/ in force:
// a deleted namespace is emptied and goes, its Locks and what they lock included; a TaskRun's
// dependents are garbage-collected with it; a Deployment's ReplicaSet makes its Pods. There is
// no scheduler or kubelet, so those Pods stay Pending and unbound, which the API server deletes
// at once (no grace period for a Pod no node runs).
import { afterAll, describe, expect, it } from '@jest/globals';
import { AppsV1Api } from '@kubernetes/client-node';
import { waitFor } from '../local-stack/process.js';
import { statusCode } from '../shared/kube-errors.js';
import { LOCK_API, LOCKABLE_LABEL } from '../locks/api.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { apiAnswer } from './support/api-answer.js';
import { kube, uniqueSuffix } from './support/env.js';
import { taskRunManifest } from './support/taskruns.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const { kc, core, custom } = kube();
const apps = kc.makeApiClient(AppsV1Api);
const HOLD = 'hostflow.test/hold';
const created: string[] = [];

afterAll(async () => {
  for (const name of created) await core.deleteNamespace({ name }).catch(() => undefined);
});

async function lockableNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${uniqueSuffix()}`;
  await core.createNamespace({
    body: { metadata: { name, labels: { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value } } },
  });
  created.push(name);
  return name;
}

async function lock(namespace: string, name: string, finalizers: string[] = []): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...LOCK_API,
    namespace,
    body: {
      apiVersion: 'kotas.tech/v1',
      kind: 'Lock',
      metadata: { name, finalizers },
      spec: { reason: 'namespace deletion test' },
    },
  });
  // A Lock applies once the API server's param cache has it: wait for the first refusal.
  await waitFor(`Lock ${namespace}/${name} to apply`, async () => {
    const answer = await apiAnswer(core.deleteNamespacedSecret({ namespace, name, dryRun: 'All' }));
    return /is locked by Lock/.test(answer) ? true : undefined;
  });
}

async function secret(namespace: string, name: string, owner?: { name: string; uid: string }) {
  const ownerReferences = owner
    ? [{ apiVersion: 'tekton.dev/v1', kind: 'TaskRun', name: owner.name, uid: owner.uid }]
    : undefined;
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name, ownerReferences }, stringData: { key: 'value' } },
  });
}

async function taskRun(namespace: string, name: string): Promise<{ name: string; uid: string }> {
  const created = (await custom.createNamespacedCustomObject({
    ...TASKRUN_API,
    namespace,
    body: taskRunManifest(namespace, { name, platform: 'linux/amd64' }),
  })) as { metadata: { uid: string } };
  return { name, uid: created.metadata.uid };
}

const gone = (read: () => Promise<unknown>) => async () =>
  (await read().then(
    () => false,
    (err: unknown) => (statusCode(err) === 404 ? true : Promise.reject(err)),
  ))
    ? true
    : undefined;

const namespaceGone = (name: string) =>
  waitFor(
    `namespace ${name} to be deleted`,
    gone(() => core.readNamespace({ name })),
    {
      timeoutMs: 60_000,
      intervalMs: 250,
    },
  );

describe('a deleted namespace', () => {
  it('is emptied and goes within a minute: locked Secrets and TaskRuns, their Locks, a Deployment and its Pods', async () => {
    const namespace = await lockableNamespace('nsdel');
    await secret(namespace, 'creds');
    await secret(namespace, 'build');
    await taskRun(namespace, 'build');
    await lock(namespace, 'creds');
    await lock(namespace, 'build'); // the TaskRun and the Secret of the same name
    const refused = await apiAnswer(
      custom.deleteNamespacedCustomObject({ ...TASKRUN_API, namespace, name: 'build' }),
    );
    expect(refused).toMatch(/^403: .*taskruns .*\/build is locked by Lock/);
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
          },
        },
      },
    });
    const pods = await waitFor('the ReplicaSet to make 2 Pods', async () => {
      const items = (await core.listNamespacedPod({ namespace })).items;
      return items.length === 2 ? items : undefined;
    });
    expect(pods.map((p) => p.metadata?.ownerReferences?.[0]?.kind)).toEqual([
      'ReplicaSet',
      'ReplicaSet',
    ]);

    await core.deleteNamespace({ name: namespace });
    await namespaceGone(namespace);
  }, 90_000);

  it('deletes what a Lock protects there even while that Lock itself is still held', async () => {
    // The Lock outlives the namespace's contents (a finalizer holds it), so the namespace
    // controller's DELETE of the locked Secret meets the Lock: the policy lets it through,
    // since the namespace takes the Lock with it anyway.
    const namespace = await lockableNamespace('nsdel-held');
    await secret(namespace, 'kept');
    await lock(namespace, 'kept', [HOLD]);

    await core.deleteNamespace({ name: namespace });
    await waitFor(
      'the locked Secret to be deleted',
      gone(() => core.readNamespacedSecret({ namespace, name: 'kept' })),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // The Lock was still there when the Secret it protects went (its finalizer holds it); the
    // namespace controller reaches it in its own time (custom resources after core ones, or
    // not), so its deletion is waited for rather than read once.
    const readHeld = async () =>
      (await custom.getNamespacedCustomObject({ ...LOCK_API, namespace, name: 'kept' })) as {
        metadata: { deletionTimestamp?: string };
      };
    await readHeld();
    await waitFor('the held Lock to be marked for deletion', async () =>
      (await readHeld()).metadata.deletionTimestamp ? true : undefined,
    );

    await custom.patchNamespacedCustomObject(
      { ...LOCK_API, namespace, name: 'kept', body: { metadata: { finalizers: null } } },
      MERGE_PATCH,
    );
    await namespaceGone(namespace);
  }, 90_000);
});

describe('the garbage collector', () => {
  it("deletes a TaskRun's dependents with it, and leaves a Secret no one owns", async () => {
    const namespace = await lockableNamespace('gc');
    const owner = await taskRun(namespace, 'owner');
    await secret(namespace, 'owned', owner);
    await secret(namespace, 'unowned');
    await custom.deleteNamespacedCustomObject({ ...TASKRUN_API, namespace, name: 'owner' });
    await waitFor(
      'the owned Secret to be collected',
      gone(() => core.readNamespacedSecret({ namespace, name: 'owned' })),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect((await core.readNamespacedSecret({ namespace, name: 'unowned' })).metadata?.name).toBe(
      'unowned',
    );
  }, 90_000);
});
