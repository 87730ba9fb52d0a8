// Locks enforced by the real kube-apiserver through the ValidatingAdmissionPolicy in
// deploy/locks/ (installed by global-setup as `npm start` installs it): no webhook, no fake
// admission. Requests go through the client as kubectl sends them: replace (edit), merge patch
// (apply, label), delete, delete-collection, subresources, dry-run.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';
import { waitFor } from '../local-stack/process.js';
import { LOCK_MANAGED_BY } from '../locks/api.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { apiAnswer as outcome } from './support/api-answer.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';
import { tenantIdentity } from './support/service-account.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const { kc, core, custom } = kube();
const apps = kc.makeApiClient(AppsV1Api);
const LOCK_API = { group: 'kotas.tech', version: 'v1', plural: 'locks' } as const;
const namespace = `locks-${uniqueSuffix()}`;
const optedOut = `locks-off-${uniqueSuffix()}`;

const lockAuditMetrics = testEnv('lockAuditMetrics');

beforeAll(async () => {
  await core.createNamespace({
    body: { metadata: { name: namespace, labels: { lockable: 'true' } } },
  });
  await core.createNamespace({ body: { metadata: { name: optedOut } } });
});

afterAll(async () => {
  for (const ns of [namespace, optedOut]) {
    const locks = (await custom.listNamespacedCustomObject({ ...LOCK_API, namespace: ns })) as {
      items: Array<{ metadata: { name: string } }>;
    };
    for (const lock of locks.items) await deleteLock(lock.metadata.name, ns);
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
  }
});

interface LockSpec {
  reason?: string;
  owner?: string;
  operations?: string[];
  resources?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  subResources?: string[];
}

async function createLock(
  name: string,
  spec: LockSpec,
  ns = namespace,
  labels?: Record<string, string>,
): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...LOCK_API,
    namespace: ns,
    body: { apiVersion: 'kotas.tech/v1', kind: 'Lock', metadata: { name, labels }, spec },
  });
}

async function deleteLock(name: string, ns = namespace): Promise<void> {
  await custom.deleteNamespacedCustomObject({ ...LOCK_API, namespace: ns, name });
}

async function configMap(name: string, ns = namespace): Promise<void> {
  await core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name }, data: { v: '1' } },
  });
}

const labelConfigMap = (name: string, ns = namespace) =>
  core.patchNamespacedConfigMap(
    { name, namespace: ns, body: { metadata: { labels: { touched: uniqueSuffix() } } } },
    MERGE_PATCH,
  );

/** A Lock takes effect once the API server's param cache has it: wait for the first denial. */
async function waitLocked(what: string, probe: () => Promise<unknown>): Promise<string> {
  return waitFor(
    `${what} to be locked`,
    async () => {
      const answer = await outcome(probe());
      return answer === 'allowed' ? undefined : answer;
    },
    { timeoutMs: 10_000, intervalMs: 50 },
  );
}

describe('a locked ConfigMap', () => {
  it('refuses update, patch and delete, naming the Lock, its reason and how to unlock', async () => {
    await configMap('settings');
    await createLock('settings', { reason: 'release 1.2 is rolling out' });
    const denied = await waitLocked('settings', () => labelConfigMap('settings'));
    expect(denied).toBe(
      `403: configmaps "settings" is forbidden: ValidatingAdmissionPolicy 'locks.kotas.tech' with binding 'locks.kotas.tech' denied ` +
        `request: configmaps ${namespace}/settings is locked by Lock ${namespace}/settings ` +
        `(reason: release 1.2 is rolling out). To unlock: kubectl -n ${namespace} delete lock settings`,
    );
    const current = await core.readNamespacedConfigMap({ name: 'settings', namespace });
    current.data = { v: '2' };
    expect(
      await outcome(
        core.replaceNamespacedConfigMap({ name: 'settings', namespace, body: current }),
      ),
    ).toMatch(/^403: .*is locked by Lock/);
    expect(await outcome(core.deleteNamespacedConfigMap({ name: 'settings', namespace }))).toMatch(
      /^403: .*is locked by Lock/,
    );
    // dry-run answers as the real call would, for both outcomes
    expect(
      await outcome(core.deleteNamespacedConfigMap({ name: 'settings', namespace, dryRun: 'All' })),
    ).toMatch(/^403: .*is locked by Lock/);
    await configMap('neighbour');
    expect(
      await outcome(
        core.deleteNamespacedConfigMap({ name: 'neighbour', namespace, dryRun: 'All' }),
      ),
    ).toBe('allowed');
    expect(await outcome(labelConfigMap('neighbour'))).toBe('allowed');
  });

  it('stays when the collection is deleted, or each object in turn as kubectl delete --all does', async () => {
    await configMap('kept');
    await configMap('swept');
    await createLock('kept', { reason: 'collection test' });
    await waitLocked('kept', () => labelConfigMap('kept'));
    const names = async () =>
      (await core.listNamespacedConfigMap({ namespace })).items.map((cm) => cm.metadata!.name!);
    // One DELETE of the collection: admitted object by object, refused at a locked one. The API
    // server stops there, so how many unlocked objects went first is not defined.
    const answer = await outcome(core.deleteCollectionNamespacedConfigMap({ namespace }));
    expect(answer).toMatch(/^403: .*configmaps .*\/(kept|settings) is locked by Lock/);
    expect(await names()).toEqual(expect.arrayContaining(['kept', 'settings']));
    // kubectl delete --all: a DELETE per object; the locked ones are refused, the rest go.
    await configMap('swept').catch(() => undefined);
    const refused: string[] = [];
    for (const name of await names()) {
      const result = await outcome(core.deleteNamespacedConfigMap({ name, namespace }));
      if (result !== 'allowed') refused.push(name);
    }
    expect(refused.sort()).toEqual(['kept', 'settings']);
    expect((await names()).sort()).toEqual(['kept', 'settings']);
  });

  it('is created freely, generated names included; a Lock never blocks a CREATE', async () => {
    await createLock('comes-later', { reason: 'locked before it exists' });
    // wait until the Lock is in force, on another object of that name
    await configMap('probe-create');
    await createLock('probe-create', { reason: 'probe' });
    await waitLocked('probe-create', () => labelConfigMap('probe-create'));
    expect(await outcome(configMap('comes-later'))).toBe('allowed');
    expect(
      await outcome(
        core.createNamespacedConfigMap({
          namespace,
          body: { metadata: { generateName: 'generated-' } },
        }),
      ),
    ).toBe('allowed');
    expect(await outcome(labelConfigMap('comes-later'))).toMatch(/^403: /);
  });

  it('is unlocked as soon as its Lock is deleted', async () => {
    await configMap('released');
    await createLock('released', { reason: 'until the test deletes it' });
    await waitLocked('released', () => labelConfigMap('released'));
    const t0 = Date.now();
    await deleteLock('released');
    await waitFor(
      'the update allowed',
      async () => ((await outcome(labelConfigMap('released'))) === 'allowed' ? true : undefined),
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    console.log(`update allowed ${Date.now() - t0} ms after the Lock was deleted`);
  });
});

describe('a Lock', () => {
  it('never locks itself or another Lock', async () => {
    await createLock('self', { reason: 'a Lock named like itself' });
    await createLock('other', { reason: 'first' });
    await configMap('self');
    await waitLocked('self', () => labelConfigMap('self'));
    expect(
      await outcome(
        custom.patchNamespacedCustomObject(
          { ...LOCK_API, namespace, name: 'self', body: { spec: { reason: 'changed' } } },
          MERGE_PATCH,
        ),
      ),
    ).toBe('allowed');
    expect(await outcome(deleteLock('other'))).toBe('allowed');
    expect(await outcome(deleteLock('self'))).toBe('allowed');
  });

  it('narrows to the operations, resources, groups, versions and subresources it names', async () => {
    await configMap('only-delete');
    await createLock('only-delete', { operations: ['DELETE'] });
    await waitLocked('only-delete', () =>
      core.deleteNamespacedConfigMap({ name: 'only-delete', namespace, dryRun: 'All' }),
    );
    expect(await outcome(labelConfigMap('only-delete'))).toBe('allowed');

    await configMap('secrets-only');
    await createLock('secrets-only', { resources: ['secrets'] });
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'secrets-only' } } });
    await waitLocked('secret secrets-only', () =>
      core.deleteNamespacedSecret({ name: 'secrets-only', namespace, dryRun: 'All' }),
    );
    expect(await outcome(labelConfigMap('secrets-only'))).toBe('allowed');

    await configMap('apps-only');
    await createLock('apps-only', { apiGroups: ['apps'], apiVersions: ['v1'] });
    await createLock('probe-apps', {});
    await configMap('probe-apps');
    await waitLocked('probe-apps', () => labelConfigMap('probe-apps'));
    expect(await outcome(labelConfigMap('apps-only'))).toBe('allowed');
  });
});

describe('a locked Deployment and TaskRun', () => {
  beforeAll(async () => {
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
          },
        },
      },
    });
  });

  it('refuses scale and status, unless the Lock names other subresources', async () => {
    await createLock('web', { reason: 'no scaling during the freeze' });
    const scale = () =>
      apps.patchNamespacedDeploymentScale(
        { name: 'web', namespace, body: { spec: { replicas: 3 } } },
        MERGE_PATCH,
      );
    expect(await waitLocked('web scale', scale)).toMatch(
      /^403: .*deployments\/scale .*\/web is locked by Lock .*no scaling during the freeze/,
    );
    expect(
      await outcome(
        apps.patchNamespacedDeploymentStatus(
          { name: 'web', namespace, body: { status: { observedGeneration: 1 } } },
          MERGE_PATCH,
        ),
      ),
    ).toMatch(/^403: .*deployments\/status/);
    await deleteLock('web');
    await createLock('web', { subResources: ['status'] });
    await waitLocked('web status', () =>
      apps.patchNamespacedDeploymentStatus(
        { name: 'web', namespace, body: { status: { observedGeneration: 2 } } },
        MERGE_PATCH,
      ),
    );
    expect(await outcome(scale())).toBe('allowed');
  });

  it('refuses changes to a TaskRun (a custom resource) and its deletion', async () => {
    await custom.createNamespacedCustomObject({
      ...TASKRUN_API,
      namespace,
      body: {
        apiVersion: 'tekton.dev/v1',
        kind: 'TaskRun',
        metadata: { name: 'build' },
        spec: { params: [] },
      },
    });
    await createLock('build', { reason: 'the build is running' });
    const label = () =>
      custom.patchNamespacedCustomObject(
        { ...TASKRUN_API, namespace, name: 'build', body: { metadata: { labels: { a: 'b' } } } },
        MERGE_PATCH,
      );
    expect(await waitLocked('TaskRun build', label)).toMatch(
      /^403: .*taskruns .*\/build is locked/,
    );
    expect(
      await outcome(
        custom.deleteNamespacedCustomObject({ ...TASKRUN_API, namespace, name: 'build' }),
      ),
    ).toMatch(/^403: /);
  });
});

describe('where Locks apply', () => {
  it('leaves namespaces that have not opted in alone', async () => {
    await configMap('settings', optedOut);
    await createLock('settings', { reason: 'no effect here' }, optedOut);
    // the same Lock in the opted-in namespace is in force (it has been since the first test)
    expect(await outcome(labelConfigMap('settings'))).toMatch(/^403: /);
    expect(await outcome(labelConfigMap('settings', optedOut))).toBe('allowed');
  });

  it("lets the engine's identity change what the engine locked, and nobody else", async () => {
    const user = await namespaceEditor();
    const userCore = user.makeApiClient(CoreV1Api);
    await configMap('engine-held');
    // As the engine writes its Locks: an owner and its managed-by label (only it may set them).
    await createLock(
      'engine-held',
      { reason: 'a VM lives', owner: 'taskrun/ns/name/uid' },
      namespace,
      {
        [LOCK_MANAGED_BY.key]: LOCK_MANAGED_BY.value,
      },
    );
    await waitLocked('engine-held for the user', () =>
      userCore.patchNamespacedConfigMap(
        { name: 'engine-held', namespace, body: { metadata: { labels: { by: 'user' } } } },
        MERGE_PATCH,
      ),
    );
    const denied = await outcome(
      userCore.deleteNamespacedConfigMap({ name: 'engine-held', namespace }),
    );
    expect(denied).toContain('held by hostflow workflow taskrun/ns/name/uid');
    // global-setup installs the policy with the local admin as the engine's identity
    expect(await outcome(labelConfigMap('engine-held'))).toBe('allowed');
    // ... but only for Locks the engine owns: `settings` has no owner
    expect(await outcome(labelConfigMap('settings'))).toMatch(/^403: /);
  });
});

describe('enforcement', () => {
  // The shipped policy is cluster-wide and other test files share this API server, so it is not
  // broken in place: a copy of it, with a binding that only reaches this file's namespaces, is.
  it('fails closed: a policy that cannot be evaluated rejects what it matches, then recovers', async () => {
    const admission = kc.makeApiClient(AdmissionregistrationV1Api);
    const shipped = await admission.readValidatingAdmissionPolicy({ name: 'locks.kotas.tech' });
    const shippedBinding = await admission.readValidatingAdmissionPolicyBinding({
      name: 'locks.kotas.tech',
    });
    const name = `locks-broken-${uniqueSuffix()}`;
    await configMap('unlocked-bystander');
    await configMap('unlocked-bystander', optedOut);
    const onlyHere = {
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace, optedOut] },
      ],
    };
    // Scoped in the policy too, not only in its binding: a policy that cannot be evaluated once
    // refused a BareMetalHost write of another test file (provisioning-lifecycle), whose
    // Provisioning then could not release its hosts.
    const broken = {
      metadata: { name },
      spec: {
        ...shipped.spec,
        paramKind: { apiVersion: 'kotas.tech/v1', kind: 'NoSuchKind' },
        matchConstraints: {
          ...shipped.spec!.matchConstraints,
          namespaceSelector: {
            ...shipped.spec!.matchConstraints!.namespaceSelector, // lockable: 'true'
            ...onlyHere,
          },
        },
      },
    };
    const binding = {
      metadata: { name },
      spec: {
        ...shippedBinding.spec,
        policyName: name,
        matchResources: { namespaceSelector: onlyHere },
      },
    };
    await admission.createValidatingAdmissionPolicy({ body: broken });
    await admission.createValidatingAdmissionPolicyBinding({ body: binding });
    try {
      const refused = await waitLocked('everything in the namespace', () =>
        labelConfigMap('unlocked-bystander'),
      );
      console.log(`with the policy broken: ${refused}`);
      expect(refused).toMatch(/^422: .*failed to find resource referenced by paramKind/);
      expect(await outcome(labelConfigMap('unlocked-bystander', optedOut))).toBe('allowed');
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name });
      await admission.deleteValidatingAdmissionPolicy({ name });
    }
    await waitFor(
      'the unlocked ConfigMap writable again',
      async () =>
        (await outcome(labelConfigMap('unlocked-bystander'))) === 'allowed' ? true : undefined,
      { timeoutMs: 10_000, intervalMs: 50 },
    );
  });
});

describe('what operators see', () => {
  /** The counter's value for this namespace and Lock, 0 before its first denial. */
  const deniedCount = async (lock: string, ns = namespace): Promise<number> => {
    const text = await (await fetch(lockAuditMetrics)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`hostflow_lock_denials_total{namespace="${ns}",lock="${lock}"`));
    return line ? Number(line.split(' ').pop()) : 0;
  };
  const lockStatus = async (name: string, ns = namespace) =>
    (
      (await custom.getNamespacedCustomObject({ ...LOCK_API, namespace: ns, name })) as {
        status?: {
          blockedAttempts?: number;
          lastBlocked?: { user: string; operation: string; resource: string };
          conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
        };
      }
    ).status;

  it('counts denials per namespace and Lock, in a metric and in the Lock status', async () => {
    const editor = (await namespaceEditor()).makeApiClient(CoreV1Api);
    await configMap('audited');
    await createLock('audited', { reason: 'audit me' });
    await waitLocked('audited', () => labelConfigMap('audited')); // one denial, maybe more
    const before = await waitFor('the first denials counted', async () => {
      const n = await deniedCount('audited');
      return n > 0 ? n : undefined;
    });
    for (const call of [
      () =>
        editor.patchNamespacedConfigMap(
          { name: 'audited', namespace, body: { metadata: { labels: { by: 'editor' } } } },
          MERGE_PATCH,
        ),
      () => editor.deleteNamespacedConfigMap({ name: 'audited', namespace, dryRun: 'All' }),
      () => editor.deleteNamespacedConfigMap({ name: 'audited', namespace }),
    ]) {
      expect(await outcome(call())).toMatch(/^403: /);
    }
    await waitFor('three more denials counted', async () =>
      (await deniedCount('audited')) === before + 3 ? true : undefined,
    );
    const status = await waitFor('the Lock status to count them', async () => {
      const current = await lockStatus('audited');
      return current?.blockedAttempts === before + 3 ? current : undefined;
    });
    expect(status.lastBlocked).toMatchObject({
      user: expect.stringMatching(/^system:serviceaccount:.*:tenant-/),
      operation: 'delete',
      resource: 'configmaps',
    });
    expect(await deniedCount('audited', optedOut)).toBe(0);
  });

  it('says in the status whether the Lock is enforced, and how to make it so', async () => {
    await createLock('enforced-here', { reason: 'status' });
    await createLock('enforced-nowhere', { reason: 'status' }, optedOut);
    const enforced = (ns: string, name: string) =>
      waitFor(`the Enforced condition of ${ns}/${name}`, async () =>
        (await lockStatus(name, ns))?.conditions?.find((c) => c.type === 'Enforced'),
      );
    expect(await enforced(namespace, 'enforced-here')).toMatchObject({
      status: 'True',
      reason: 'PolicyBound',
    });
    expect(await enforced(optedOut, 'enforced-nowhere')).toMatchObject({
      status: 'False',
      reason: 'NamespaceNotLockable',
      message: expect.stringContaining(`kubectl label namespace ${optedOut} lockable=true`),
    });
  });
});

/** A ServiceAccount allowed to change ConfigMaps in the namespace, as a tenant would be. */
const namespaceEditor = (): Promise<KubeConfig> =>
  tenantIdentity(kc, namespace, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }]);
