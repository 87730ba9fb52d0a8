// The engine runs as its manifests' ServiceAccounts, with exactly their RBAC: the worker, the
// bridge and the OTP service each authenticate with a token of their own account, bound as
// deploy/base binds it (moved into this file's namespaces), and held to the engine-rights policy
// as deploy/base holds them. A local-platform and a static TaskRun are then served and cleaned
// up, a terminated one's Secret is collected, and no process was refused anything: the RBAC is
// enough, and the policy refuses nothing the engine does. What each account may NOT do is asked of the real
// API server too, by SubjectAccessReviews and by requests made with the account's own token.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_ADMIN_USER } from '../local-stack/kube-apiserver.js';
import { installLockPolicy } from '../local-stack/lock-policy.js';
import { freePort } from '../local-stack/ports.js';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { statusCode } from '../shared/kube-errors.js';
import { LOCK_API, LOCK_MANAGED_BY } from '../locks/api.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import {
  kubectl,
  manifestFile,
  rbacFor,
  renderManifests,
  type Manifest,
} from './support/manifests.js';
import type { TestScope } from './support/scope.js';
import { holdEngineAccounts } from './support/engine-rights.js';
import { refusedCalls } from './support/engine.js';
import { serviceAccountKubeconfig } from './support/service-account.js';
import { createStaticPool, SHORT_GC_PERIODS, type StaticPool } from './support/static-pool.js';

const clusterScoped: Manifest[] = [];
let pool: StaticPool;
const health = { worker: '', bridge: '' };
/** Each component's kubeconfig: its account's token, nothing more. */
const kubeconfigs: Record<string, string> = {};
/** Lets the engine's accounts go from the engine-rights policy. */
let letGo: (() => Promise<void>) | undefined;

/**
 * The Lock policies name the engine's identity (the overlay sets the worker's ServiceAccount);
 * this API server's were installed for the tests' admin. The worker's account is added, and the
 * test waits until admission lets it write a Lock marked as the engine's (a dry run as it).
 */
async function exemptWorkerFromItsLocks(scope: TestScope): Promise<void> {
  const account = `system:serviceaccount:${scope.engineNamespace}:hostflow-worker`;
  await installLockPolicy(scope.kube.kc, [LOCAL_ADMIN_USER, account]);
  const worker = new KubeConfig();
  worker.loadFromFile(kubeconfigs.worker!);
  const custom = worker.makeApiClient(CustomObjectsApi);
  const marked = {
    ...LOCK_API,
    namespace: scope.engineNamespace,
    dryRun: 'All',
    body: {
      apiVersion: `${LOCK_API.group}/${LOCK_API.version}`,
      kind: 'Lock',
      metadata: {
        name: `probe-${uniqueSuffix()}`,
        labels: { [LOCK_MANAGED_BY.key]: LOCK_MANAGED_BY.value },
      },
      spec: { owner: 'probe', reason: 'the test checks the engine may mark its Locks' },
    },
  };
  await waitFor('admission to let the worker mark a Lock as the engine', () =>
    custom.createNamespacedCustomObject(marked).then(
      () => true,
      () => undefined,
    ),
  );
}

beforeAll(async () => {
  const objects = await renderManifests('deploy/overlays/example');
  const [workerHealth, bridgeHealth] = await Promise.all([freePort(), freePort()]);
  health.worker = `http://127.0.0.1:${workerHealth}`;
  health.bridge = `http://127.0.0.1:${bridgeHealth}`;
  pool = await createStaticPool('rbac', 1, {
    worker: { HOSTFLOW_HEALTH_ADDRESS: `127.0.0.1:${workerHealth}`, ...SHORT_GC_PERIODS },
    bridge: { HOSTFLOW_HEALTH_ADDRESS: `127.0.0.1:${bridgeHealth}`, ...SHORT_GC_PERIODS },
    identities: async (scope) => {
      const rbac = rbacFor(objects, scope);
      clusterScoped.push(...rbac.filter((o) => !o.metadata.namespace));
      await kubectl(['apply', '-f', manifestFile(rbac)]);
      const kubeconfigOf = (component: string) =>
        serviceAccountKubeconfig(scope.kube.kc, scope.engineNamespace, `hostflow-${component}`);
      for (const component of ['worker', 'bridge', 'otp'])
        kubeconfigs[component] = await kubeconfigOf(component);
      await exemptWorkerFromItsLocks(scope);
      // Held to the engine's rights as the kustomize base holds them: what they do here must pass.
      const worker = new KubeConfig();
      worker.loadFromFile(kubeconfigs.worker!);
      letGo = await holdEngineAccounts(
        scope.kube.kc,
        ['worker', 'bridge', 'otp'].map(
          (component) => `system:serviceaccount:${scope.engineNamespace}:hostflow-${component}`,
        ),
        { kc: worker, namespace: scope.namespace },
      );
      return { worker: kubeconfigs.worker!, bridge: kubeconfigs.bridge!, otp: kubeconfigs.otp! };
    },
  });
  await pool.scope.setHostConfig({
    'local-platforms': 'linux/amd64',
    ...pool.hostEntries([{ host: 0 }]),
  });
});

afterAll(async () => {
  await pool?.dispose();
  await letGo?.();
  if (clusterScoped.length > 0)
    await kubectl(['delete', '--ignore-not-found', '-f', manifestFile(clusterScoped)]);
});

/** What each process wrote to its log (the files the test support gives them). */
function logs(): Record<string, string> {
  const dir = join(testEnv('stateDir'), 'logs');
  const { namespace } = pool.scope;
  return Object.fromEntries(
    ['worker', 'bridge', 'otp'].map((kind) => [
      kind,
      readFileSync(join(dir, `${kind}-${namespace}.log`), 'utf8'),
    ]),
  );
}

describe('the engine as its manifests deploy it', () => {
  it('lets the bridge only read and watch (kubectl auth can-i --list as its account)', async () => {
    const { stdout } = await kubectl([
      'auth',
      'can-i',
      '--list',
      `--as=system:serviceaccount:${pool.scope.engineNamespace}:hostflow-bridge`,
      '-n',
      pool.scope.engineNamespace,
    ]);
    const grants = stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => ({
        resource: line.split(/\s+/)[0]!,
        verbs: /\[([^\]]*)\]\s*$/.exec(line)![1]!.split(' '),
      }))
      // Every account may review its own rights; that is all it may create.
      .filter((g) => !g.resource.startsWith('selfsubject'));
    expect(grants.map((g) => g.resource)).toEqual(
      expect.arrayContaining([
        'taskruns.tekton.dev',
        'configmaps',
        'hostflowmachines.infrastructure.hostflow.dev',
      ]),
    );
    for (const { resource, verbs } of grants)
      expect({
        resource,
        verbs: verbs.filter((v) => !['get', 'list', 'watch'].includes(v)),
      }).toEqual({ resource, verbs: [] });
  });

  it('serves a local-platform TaskRun and cleans it up', async () => {
    const { taskRuns } = pool.scope;
    await taskRuns.create({ name: 'local', platform: 'linux/amd64' });
    expect(await taskRuns.waitForSecret('local')).toEqual({ host: 'localhost' });
    await taskRuns.complete('local');
    await taskRuns.waitForSecretGone('local');
  });

  it('serves a static TaskRun with a build user and an OTP, and cleans it up', async () => {
    const { taskRuns } = pool.scope;
    const tr = await taskRuns.create({ name: 'static', platform: pool.platform });
    const secret = await taskRuns.waitForSecret(tr.name);
    expect(secret.host).toMatch(/^u-[0-9a-f]{12}@/);
    const user = secret.host!.split('@')[0]!;
    expect(await pool.buildUsers(pool.hosts[0]!)).toContain(user);
    const reasons = async () =>
      (await pool.scope.kube.core.listNamespacedEvent({ namespace: pool.scope.namespace })).items
        .filter((e) => e.involvedObject.uid === tr.uid)
        .map((e) => e.reason);
    await taskRuns.complete(tr.name);
    await taskRuns.waitForSecretGone(tr.name);
    await waitFor('the build user to be removed', async () =>
      (await pool.buildUsers(pool.hosts[0]!)).includes(user) ? undefined : true,
    );
    await waitFor('the CleanedUp Event', async () =>
      (await reasons()).includes('CleanedUp') ? true : undefined,
    );
    expect(await reasons()).toContain('HostAllocated');
  });

  it("collects a terminated TaskRun's Secret without listing Secrets (from Temporal's records)", async () => {
    const { scope } = pool;
    const tr = await scope.taskRuns.create({ name: 'terminated', platform: 'linux/amd64' });
    await scope.taskRuns.waitForSecret(tr.name);
    // No bridge meanwhile, so that no new run takes the TaskRun over while it is being deleted.
    await pool.stopBridge();
    try {
      await scope.temporal.client.workflow
        .getHandle(WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid))
        .terminate('test: an operator ends the workflow');
      // As `kubectl delete --cascade=orphan` does: the Secret is the engine's to find.
      await scope.taskRuns.delete(tr.name, { orphan: true });
      // (Kubernetes' garbage collector orphans the Secret first: it removes the ownerReference.)
      await waitFor(
        'the TaskRun gone',
        async () =>
          (await statusOf(() => scope.taskRuns.get(tr.name))) === 404 ? true : undefined,
        { timeoutMs: 60_000 },
      );
      await scope.taskRuns.waitForSecretGone(tr.name, 30_000);
    } finally {
      await pool.startBridge();
    }
    const events = await scope.kube.core.listNamespacedEvent({ namespace: scope.engineNamespace });
    expect(events.items.map((e) => e.reason)).toContain('OrphanSecretCollected');
  });

  it('was refused nothing: no process logged a forbidden call', () => {
    for (const [kind, log] of Object.entries(logs())) {
      expect(log.length).toBeGreaterThan(0);
      const refused = refusedCalls(log);
      expect({ kind, refused }).toEqual({ kind, refused: [] });
    }
  });

  it('answers its probes: live and ready once it serves', async () => {
    for (const base of [health.worker, health.bridge]) {
      // The test above restarted the bridge: ready comes once its watches have listed again.
      const ready = await waitFor(
        `${base}/readyz to answer 200`,
        async () => {
          const answer = await fetch(`${base}/readyz`);
          const text = await answer.text();
          return answer.status === 200 ? text : undefined;
        },
        { timeoutMs: 60_000 },
      );
      expect(ready).toBe('ok\n');
      const [live, other] = await Promise.all(
        ['/healthz', '/metrics'].map((path) => fetch(`${base}${path}`)),
      );
      expect([live!.status, await live!.text()]).toEqual([200, 'ok\n']);
      expect(other!.status).toBe(404);
    }
  });
});

/** The component's account, as the API server names it. */
const accountOf = (component: string) => ({
  user: `system:serviceaccount:${pool.scope.engineNamespace}:hostflow-${component}`,
  groups: [
    'system:serviceaccounts',
    `system:serviceaccounts:${pool.scope.engineNamespace}`,
    'system:authenticated',
  ],
});

interface Attempt {
  verb: string;
  resource: string;
  group?: string;
  /** Unset: in every namespace (or a cluster-scoped resource). */
  namespace?: string;
  name?: string;
}

/** What RBAC lets the component do, asked of the API server (a SubjectAccessReview). */
async function allowed(component: string, attempt: Attempt): Promise<boolean> {
  const review = await pool.scope.kube.kc
    .makeApiClient(AuthorizationV1Api)
    .createSubjectAccessReview({
      body: {
        spec: {
          ...accountOf(component),
          resourceAttributes: { group: '', ...attempt },
        },
      },
    });
  return review.status!.allowed;
}

/** The component's own clients: its token, as its process has it. */
function clientsOf(component: string) {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigs[component]!);
  return { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
}

/** The HTTP status a request as the component gets: 403 when RBAC refuses it. */
async function statusOf(call: () => Promise<unknown>): Promise<number> {
  try {
    await call();
    return 200;
  } catch (err) {
    return statusCode(err) ?? -1;
  }
}

describe('what each component cannot do, as the API server answers its own token', () => {
  it('the OTP service reads and writes its records only: never an admin key or a cloud credential', async () => {
    const { engineNamespace, otpNamespace } = pool.scope;
    // A cloud credential beside the static host's admin key (admin-0), as an install has them.
    await pool.scope.kube.core.createNamespacedSecret({
      namespace: engineNamespace,
      body: {
        metadata: { name: 'aws-creds' },
        stringData: { 'access-key-id': 'AKIAEXAMPLE', 'secret-access-key': 'not-a-real-one' },
      },
    });
    const otp = clientsOf('otp');
    const refused = {
      'read the admin key': await statusOf(() =>
        otp.core.readNamespacedSecret({ name: 'admin-0', namespace: engineNamespace }),
      ),
      'read the cloud credential': await statusOf(() =>
        otp.core.readNamespacedSecret({ name: 'aws-creds', namespace: engineNamespace }),
      ),
      'list the engine namespace': await statusOf(() =>
        otp.core.listNamespacedSecret({ namespace: engineNamespace }),
      ),
      "list a tenant's Secrets": await statusOf(() =>
        otp.core.listNamespacedSecret({ namespace: pool.scope.namespace }),
      ),
      'plant a Secret in the engine namespace': await statusOf(() =>
        otp.core.createNamespacedSecret({
          namespace: engineNamespace,
          body: { metadata: { name: 'planted' }, stringData: { id_rsa: 'x' } },
        }),
      ),
    };
    expect(refused).toEqual(Object.fromEntries(Object.keys(refused).map((k) => [k, 403])));
    // …while its own namespace serves it (the static TaskRun above redeemed through it).
    expect(
      await statusOf(() => otp.core.listNamespacedSecret({ namespace: otpNamespace, limit: 1 })),
    ).toBe(200);
    for (const verb of ['get', 'list', 'create', 'delete'])
      expect(await allowed('otp', { verb, resource: 'secrets', namespace: otpNamespace })).toBe(
        true,
      );
    // Nowhere else: not the engine namespace, not a tenant's, not cluster-wide.
    const granted: string[] = [];
    for (const where of [engineNamespace, pool.scope.namespace, undefined])
      for (const verb of ['get', 'list', 'watch', 'create', 'update', 'delete'])
        if (await allowed('otp', { verb, resource: 'secrets', namespace: where }))
          granted.push(`${verb} secrets in ${where ?? 'every namespace'}`);
    expect(granted).toEqual([]);
  });

  it('the bridge writes nothing, anywhere: no create, update, patch or delete of any resource', async () => {
    const { engineNamespace, namespace } = pool.scope;
    const resources: Array<[string, string]> = [
      ['', 'secrets'],
      ['', 'configmaps'],
      ['', 'events'],
      ['', 'pods'],
      ['', 'pods/eviction'],
      ['', 'nodes'],
      ['', 'namespaces'],
      ['', 'serviceaccounts/token'],
      ['tekton.dev', 'taskruns'],
      ['bpa.akraino.org', 'provisionings'],
      ['bpa.akraino.org', 'provisionings/status'],
      ['cluster.x-k8s.io', 'machines'],
      ['infrastructure.hostflow.dev', 'hostflowmachines'],
      ['metal3.io', 'baremetalhosts'],
      ['machineconfiguration.openshift.io', 'machineconfigpools'],
      ['kotas.tech', 'locks'],
      ['rbac.authorization.k8s.io', 'rolebindings'],
    ];
    const granted: string[] = [];
    for (const where of [engineNamespace, namespace, undefined])
      for (const [group, resource] of resources)
        for (const verb of ['create', 'update', 'patch', 'delete', 'deletecollection'])
          if (await allowed('bridge', { verb, group, resource, namespace: where }))
            granted.push(`${verb} ${resource} in ${where ?? 'every namespace'}`);
    expect(granted).toEqual([]);
    // And as the API server answers its token.
    const bridge = clientsOf('bridge');
    const hostConfigChange = await statusOf(() =>
      bridge.core.createNamespacedConfigMap({
        namespace: engineNamespace,
        body: { metadata: { name: 'planted' } },
      }),
    );
    const tr = await pool.scope.taskRuns.create({ name: 'bridge-cannot', platform: 'none/none' });
    const taskRunPatch = await statusOf(() =>
      bridge.custom.patchNamespacedCustomObject({
        ...TASKRUN_API,
        namespace,
        name: tr.name,
        body: [{ op: 'add', path: '/metadata/labels', value: { planted: 'true' } }],
      }),
    );
    expect({ hostConfigChange, taskRunPatch }).toEqual({
      hostConfigChange: 403,
      taskRunPatch: 403,
    });
    await pool.scope.taskRuns.delete(tr.name);
  });

  it("the worker reads tenants' Secrets only by name: it cannot list or watch them", async () => {
    const { engineNamespace, namespace } = pool.scope;
    const worker = clientsOf('worker');
    const listed = {
      "a tenant's namespace": await statusOf(() => worker.core.listNamespacedSecret({ namespace })),
      'every namespace': await statusOf(() => worker.core.listSecretForAllNamespaces()),
    };
    expect(listed).toEqual({ "a tenant's namespace": 403, 'every namespace': 403 });
    const refused: string[] = [];
    for (const where of [namespace, engineNamespace, undefined])
      for (const verb of ['list', 'watch', 'deletecollection'])
        if (await allowed('worker', { verb, resource: 'secrets', namespace: where }))
          refused.push(`${verb} secrets in ${where ?? 'every namespace'}`);
    expect(refused).toEqual([]);
    // What the TaskRun contract needs, by name, in the tenant's namespace.
    for (const verb of ['get', 'create', 'update', 'delete'])
      expect(
        await allowed('worker', {
          verb,
          resource: 'secrets',
          namespace,
          name: 'multi-platform-ssh-x',
        }),
      ).toBe(true);
  });
});
