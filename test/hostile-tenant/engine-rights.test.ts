// The engine's own rights cannot become others' (issue 37, item 5), asked of the real API server
// as the engine's own accounts: the manifests' ServiceAccounts with exactly deploy/base's RBAC,
// held to the engine-rights policy as the kustomize base holds them
// (deploy/engine-rights/engine-rights-policy.yaml). Whoever holds the worker's token (a playbook
// that read it, say):
//   - gets no Secret of type kubernetes.io/service-account-token, so no other account's token,
//     and is told why;
//   - writes no Secret or ConfigMap of a shape the engine would not make, nor replaces one the
//     engine did not make;
//   - deletes no Node whose providerID hostflow did not give a Machine.
// The engine itself still writes every Secret and ConfigMap it makes, through its own code. And a
// Lock on a Pod refuses its eviction: a drain, the engine's too, reports the Pod as blocked.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { createHostKeyStore } from '../../activities/kubernetes/host-key-store.js';
import { bundleSecret, runName, type RunRequest } from '../../activities/runner/manifests.js';
import { createKubeconfigStore } from '../../activities/kubernetes/kubeconfig-secret.js';
import { createNodeActivities } from '../../activities/kubernetes/nodes.js';
import { createProvisioningActivities } from '../../activities/kubernetes/provisionings.js';
import { createKubernetesActivities } from '../../activities/kubernetes/taskruns.js';
import { createVmHostKeySeed } from '../../activities/kubernetes/vm-host-key-seed.js';
import { createHostKeys } from '../../activities/ssh/host-keys.js';
import { createInstallerKeyActivities } from '../../activities/ssh/installer-key.js';
import { waitFor } from '../../local-stack/process.js';
import { LOCK_API, LOCKABLE_LABEL } from '../../locks/api.js';
import { createSealer } from '../../otp-server/sealing.js';
import { KubeOtpStore } from '../../otp-server/store.js';
import { INSTALLER_KEY_FINALIZER, PROVISIONING_API } from '../../shared/bpa-api.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';
import { DEFAULT_RUNNER_SETTINGS, RUNNER_NAMESPACE_LABEL } from '../../shared/runner-settings.js';
import { apiAnswer } from '../support/api-answer.js';
import { holdEngineAccounts } from '../support/engine-rights.js';
import { uniqueSuffix } from '../support/env.js';
import {
  kubectl,
  manifestFile,
  rbacFor,
  renderManifests,
  type Manifest,
} from '../support/manifests.js';
import { createScope, type TestScope } from '../support/scope.js';
import { serviceAccountKubeconfig, tenantIdentity } from '../support/service-account.js';

const sfx = uniqueSuffix();
let scope: TestScope;
interface Clients {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
}
/** The engine's accounts' clients: their tokens, nothing more. */
const as = {} as Record<'worker' | 'otp', Clients>;
const clusterScoped: Manifest[] = [];
const nodes: string[] = [];
/** Where the Lock on a Pod is tried: a namespace that opted in to Locks. */
const lockable = `rights-locks-${sfx}`;
let letGo: (() => Promise<void>) | undefined;

const account = (component: string) =>
  `system:serviceaccount:${scope.engineNamespace}:hostflow-${component}`;

beforeAll(async () => {
  scope = await createScope('rights');
  const rbac = rbacFor(await renderManifests('deploy/overlays/example'), scope);
  clusterScoped.push(...rbac.filter((o) => !o.metadata.namespace));
  await kubectl(['apply', '-f', manifestFile(rbac)]);
  for (const component of ['worker', 'otp'] as const) {
    const kc = new KubeConfig();
    kc.loadFromFile(
      await serviceAccountKubeconfig(scope.kube.kc, scope.engineNamespace, `hostflow-${component}`),
    );
    as[component] = {
      kc,
      core: kc.makeApiClient(CoreV1Api),
      custom: kc.makeApiClient(CustomObjectsApi),
    };
  }
  letGo = await holdEngineAccounts(scope.kube.kc, ['worker', 'bridge', 'otp'].map(account), {
    kc: as.worker.kc,
    namespace: scope.namespace,
  });
  await scope.kube.core.createNamespace({
    body: { metadata: { name: lockable, labels: { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value } } },
  });
}, 120_000);

afterAll(async () => {
  await letGo?.();
  const { core, custom } = scope.kube;
  // The Lock first (it refuses the Pod's deletion); Pods bound to a Node no kubelet runs go only
  // when forced.
  const locks = (await custom.listNamespacedCustomObject({ ...LOCK_API, namespace: lockable })) as {
    items: Array<{ metadata: { name: string } }>;
  };
  for (const lock of locks.items)
    await custom.deleteNamespacedCustomObject({
      ...LOCK_API,
      namespace: lockable,
      name: lock.metadata.name,
    });
  for (const pod of (await core.listNamespacedPod({ namespace: lockable })).items)
    await core
      .deleteNamespacedPod({
        namespace: lockable,
        name: pod.metadata!.name!,
        gracePeriodSeconds: 0,
      })
      .catch(() => undefined);
  await core.deleteNamespace({ name: lockable }).catch(() => undefined);
  for (const name of nodes) await core.deleteNode({ name }).catch(() => undefined);
  if (clusterScoped.length > 0)
    await kubectl(['delete', '--ignore-not-found', '-f', manifestFile(clusterScoped)]);
  await scope?.dispose();
});

/** A Secret of `type` as the worker would create it in `namespace` (its answer). */
const workerCreates = (namespace: string, body: V1Secret) =>
  apiAnswer(as.worker.core.createNamespacedSecret({ namespace, body }));

const tokenSecret = (name: string, serviceAccount: string, extra: V1Secret['metadata'] = {}) => ({
  metadata: {
    ...extra,
    name,
    annotations: { ...extra.annotations, 'kubernetes.io/service-account.name': serviceAccount },
  },
  type: 'kubernetes.io/service-account-token',
});

/** The marks the engine gives a TaskRun's Secret, and the TaskRun as its owner. */
const taskRunMarks = (taskRun: { name: string; uid: string }) => ({
  labels: {
    'build.appstudio.redhat.com/multi-platform-secret': 'true',
    'app.kubernetes.io/managed-by': 'hostflow',
  },
  annotations: { 'hostflow.dev/taskrun-uid': taskRun.uid },
  ownerReferences: [
    { apiVersion: 'tekton.dev/v1', kind: 'TaskRun', name: taskRun.name, uid: taskRun.uid },
  ],
});

describe("the engine's worker account, held to the engine's rights", () => {
  it('cannot create a kubernetes.io/service-account-token Secret anywhere, marks or not, and is told why', async () => {
    const taskRun = await scope.taskRuns.create({ name: 'token-bait', platform: 'linux/amd64' });
    const answers = {
      // A tenant's account, one of the control plane's, and one in a Secret with a TaskRun's marks.
      tenant: await workerCreates(scope.namespace, tokenSecret('grab', 'default')),
      controlPlane: await workerCreates(
        'kube-system',
        tokenSecret(`grab-${sfx}`, 'clusterrole-aggregation-controller'),
      ),
      marked: await workerCreates(
        scope.namespace,
        tokenSecret('multi-platform-ssh-token-bait', 'default', taskRunMarks(taskRun)),
      ),
    };
    console.log(`a token Secret, as the worker: ${answers.tenant}`);
    const why = (where: string, sa: string) =>
      new RegExp(
        `^403: .*hostflow \\(${account('worker')}\\) may not create Secret ${where} of type ` +
          `kubernetes\\.io/service-account-token: the API server would put into it a token of ` +
          `service account ${sa}, .*hostflow never writes one`,
      );
    expect(answers.tenant).toMatch(why(`${scope.namespace}/grab`, 'default'));
    expect(answers.controlPlane).toMatch(
      why(`kube-system/grab-${sfx}`, 'clusterrole-aggregation-controller'),
    );
    expect(answers.marked).toMatch(
      why(`${scope.namespace}/multi-platform-ssh-token-bait`, 'default'),
    );
    // None was made, so no token was minted into one.
    for (const [namespace, name] of [
      [scope.namespace, 'grab'],
      ['kube-system', `grab-${sfx}`],
    ] as const)
      expect(await apiAnswer(scope.kube.core.readNamespacedSecret({ namespace, name }))).toMatch(
        /^404: /,
      );
  });

  it('cannot create a Secret of a shape the engine would not make, nor replace one it did not make', async () => {
    const taskRun = await scope.taskRuns.create({ name: 'shapes', platform: 'linux/amd64' });
    const marked = { name: 'multi-platform-ssh-shapes', ...taskRunMarks(taskRun) };
    // The tenant's own Secret of that name, made before the build: not the engine's to replace.
    const tenants = await scope.kube.core.createNamespacedSecret({
      namespace: scope.namespace,
      body: { metadata: { name: 'multi-platform-ssh-mine' }, stringData: { host: 'mine' } },
    });
    const answers = {
      'image pull credentials': await workerCreates(scope.namespace, {
        metadata: { name: 'regcred' },
        type: 'kubernetes.io/dockerconfigjson',
        stringData: { '.dockerconfigjson': '{"auths":{}}' },
      }),
      'a bootstrap token (a Node join)': await workerCreates('kube-system', {
        metadata: { name: 'bootstrap-token-abcdef' },
        type: 'bootstrap.kubernetes.io/token',
        stringData: { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef' },
      }),
      'an unmarked Opaque Secret': await workerCreates(scope.namespace, {
        metadata: { name: 'db-password' },
        stringData: { password: 'x' },
      }),
      "a TaskRun's Secret with a key the contract has not": await workerCreates(scope.namespace, {
        metadata: marked,
        stringData: { host: 'u@10.0.0.1', id_rsa: 'a private key' },
      }),
      "a TaskRun's Secret that its TaskRun does not own": await workerCreates(scope.namespace, {
        metadata: { ...marked, ownerReferences: [] },
        stringData: { host: 'u@10.0.0.1' },
      }),
      "a cluster's kubeconfig of another cluster's label": await workerCreates(scope.namespace, {
        metadata: {
          name: 'mall-kubeconfig',
          labels: { cluster: 'other', 'app.kubernetes.io/managed-by': 'hostflow' },
          annotations: { 'hostflow.dev/owner-uid': 'some-uid' },
        },
        stringData: { value: 'a kubeconfig' },
      }),
      "the tenant's own Secret, replaced with the engine's marks": await apiAnswer(
        as.worker.core.replaceNamespacedSecret({
          namespace: scope.namespace,
          name: 'multi-platform-ssh-mine',
          body: {
            metadata: {
              ...marked,
              name: 'multi-platform-ssh-mine',
              resourceVersion: tenants.metadata!.resourceVersion,
            },
            stringData: { host: 'u@10.0.0.1' },
          },
        }),
      ),
    };
    console.log(
      `a Secret the engine would not make, as the worker: ${answers['an unmarked Opaque Secret']}`,
    );
    const refused = (where: string, problem: string) =>
      new RegExp(
        `^403: .*hostflow \\(${account('worker')}\\) may not (create|update) Secret ${where}: ` +
          `${problem}\\. The engine writes only the Secrets it makes, by name, marks and keys: ` +
          'multi-platform-ssh-<TaskRun> ',
      );
    const lacks = 'it lacks the name, marks or keys of every Secret hostflow makes';
    const ns = scope.namespace;
    expect(answers).toEqual({
      'image pull credentials': expect.stringMatching(
        refused(
          `${ns}/regcred`,
          'its type kubernetes\\.io/dockerconfigjson is none hostflow writes .*',
        ),
      ),
      'a bootstrap token (a Node join)': expect.stringMatching(
        refused(
          'kube-system/bootstrap-token-abcdef',
          'its type bootstrap\\.kubernetes\\.io/token is none hostflow writes .*',
        ),
      ),
      'an unmarked Opaque Secret': expect.stringMatching(refused(`${ns}/db-password`, lacks)),
      "a TaskRun's Secret with a key the contract has not": expect.stringMatching(
        refused(`${ns}/multi-platform-ssh-shapes`, lacks),
      ),
      "a TaskRun's Secret that its TaskRun does not own": expect.stringMatching(
        refused(`${ns}/multi-platform-ssh-shapes`, lacks),
      ),
      "a cluster's kubeconfig of another cluster's label": expect.stringMatching(
        refused(`${ns}/mall-kubeconfig`, lacks),
      ),
      "the tenant's own Secret, replaced with the engine's marks": expect.stringMatching(
        refused(
          `${ns}/multi-platform-ssh-mine`,
          'the Secret there was not made by hostflow, and hostflow replaces only what it made',
        ),
      ),
    });
    const mine = await scope.kube.core.readNamespacedSecret({
      namespace: ns,
      name: 'multi-platform-ssh-mine',
    });
    expect(Buffer.from(mine.data!.host!, 'base64').toString()).toBe('mine');
  });

  it('still writes every Secret and ConfigMap the engine makes, through its own code, and replaces them', async () => {
    const { core, custom } = as.worker;
    const ns = scope.namespace;
    const engineNamespace = scope.engineNamespace;
    // A TaskRun's Secret: the admission dry run, created, then replaced with an error.
    const taskRuns = createKubernetesActivities({ core, custom, engineNamespace });
    const served = await scope.taskRuns.create({ name: 'served', platform: 'linux/amd64' });
    const keys = ['otp', 'otp-ca', 'otp-server', 'host', 'user-dir'];
    await taskRuns.admitsTaskRunSecret({ ...served, keys });
    const data = Object.fromEntries(keys.map((key) => [key, `${key} value`]));
    expect(await taskRuns.writeTaskRunSecret({ ...served, data })).toBe('written');
    await taskRuns.admitsTaskRunSecret({ ...served, keys: ['error'] });
    expect(await taskRuns.writeTaskRunSecret({ ...served, data: { error: 'no host' } })).toBe(
      'written',
    );
    // ... and one the original multi-platform-controller made, owned by its TaskRun.
    const legacy = await scope.taskRuns.create({ name: 'legacy', platform: 'linux/amd64' });
    await scope.kube.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: {
          name: 'multi-platform-ssh-legacy',
          labels: { 'build.appstudio.redhat.com/multi-platform-secret': 'true' },
          ownerReferences: [
            { apiVersion: 'tekton.dev/v1', kind: 'TaskRun', name: legacy.name, uid: legacy.uid },
          ],
        },
        stringData: { host: 'localhost' },
      },
    });
    expect(await taskRuns.writeTaskRunSecret({ ...legacy, data: { host: 'localhost' } })).toBe(
      'written',
    );

    // A cluster's outputs, made and replaced; then those an earlier hostflow left (the label
    // `cluster` only) for the one Provisioning of that label, which takes them over.
    const provisionings = createProvisioningActivities({ core, custom });
    const installer = createInstallerKeyActivities({
      core,
      custom,
      hostKeys: createHostKeys({ core, engineNamespace }),
    });
    const storeKubeconfig = createKubeconfigStore(core, custom);
    const kubeconfig =
      'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:6443}\n';
    const outputs = async (
      owner: { namespace: string; name: string; uid: string },
      cluster: string,
    ) => {
      for (let time = 0; time < 2; time++) {
        const stored = {
          namespace: ns,
          cluster,
          kubeconfig,
          server: 'https://10.0.0.1:6443',
          owner,
        };
        expect(await storeKubeconfig(stored)).toBe(`${cluster}-kubeconfig`);
        expect(await installer.ensureInstallerKey({ namespace: ns, cluster, owner })).toBe(
          `${cluster}-ssh-key`,
        );
        expect(
          await provisionings.writeClusterIpMap({
            namespace: ns,
            cluster,
            data: { MASTER_master: '10.0.0.1', 'WORKER_worker-1': '10.0.0.2' },
            owner,
          }),
        ).toBe('written');
      }
      expect(
        await installer.installerPublicKey({ namespace: ns, keySecret: `${cluster}-ssh-key` }),
      ).toMatch(/^ssh-ed25519 /);
      const key = await scope.kube.core.readNamespacedSecret({
        namespace: ns,
        name: `${cluster}-ssh-key`,
      });
      expect(key.metadata?.finalizers).toContain(INSTALLER_KEY_FINALIZER);
      // Torn down: the installer key's finalizer taken off (an update), each output deleted.
      await provisionings.deleteClusterOutputs({ namespace: ns, cluster, owner });
      for (const name of [`${cluster}-kubeconfig`, `${cluster}-ssh-key`])
        expect(
          await apiAnswer(scope.kube.core.readNamespacedSecret({ namespace: ns, name })),
        ).toMatch(/^404: /);
    };
    await outputs({ namespace: ns, name: 'shop', uid: `uid-${sfx}` }, 'shop');
    const earlier = (await scope.kube.custom.createNamespacedCustomObject({
      ...PROVISIONING_API,
      namespace: ns,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Provisioning',
        metadata: { name: 'earlier', labels: { cluster: 'earlier' } },
        spec: {},
      },
    })) as { metadata: { uid: string } };
    const earlierOutput = { labels: { cluster: 'earlier' } };
    await scope.kube.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'earlier-ssh-key', ...earlierOutput },
        stringData: { id_rsa: 'a private key', 'id_rsa.pub': 'ssh-ed25519 AAAAearlier hostflow' },
      },
    });
    await scope.kube.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'earlier-kubeconfig', ...earlierOutput },
        stringData: { value: 'old' },
      },
    });
    await scope.kube.core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: 'earlier-configmap', ...earlierOutput },
        data: { MASTER_master: '10.0.0.9' },
      },
    });
    await outputs({ namespace: ns, name: 'earlier', uid: earlier.metadata.uid }, 'earlier');

    // The engine namespace's: the VM host-key seed, and the host keys recorded.
    const seed = createVmHostKeySeed({ core, engineNamespace });
    expect((await seed()).length).toBe(32);
    expect(await seed()).toEqual(await seed());
    const store = createHostKeyStore({ core, engineNamespace });
    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
    expect(await store.recordFirst('host-a', key)).toEqual({ key, recorded: true });
    await store.remember('host-b', key);
    expect(await store.held('host-b')).toBe(key);

    // The OTP service's records, as its own account.
    const otp = new KubeOtpStore(as.otp.core, scope.otpNamespace, createSealer(randomBytes(32)));
    const token = await otp.issue(Buffer.from('a build key'), new Date(Date.now() + 60_000));
    expect((await otp.redeem(token))?.toString()).toBe('a build key');

    // A runner Job's bundle, made and then given its Job as owner (an update), in a namespace a
    // cluster admin marked for runners (the engine's here, where these tests put the runners'
    // rights). The same Secret in a namespace not so marked is refused.
    await scope.kube.core.patchNamespace(
      {
        name: engineNamespace,
        body: { metadata: { labels: { [RUNNER_NAMESPACE_LABEL]: 'true' } } },
      },
      MERGE_PATCH,
    );
    const run: RunRequest = {
      name: runName(`rights-${sfx}`),
      cluster: `${ns}/shop`,
      what: 'kubespray cluster.yml',
      command: ['ansible-playbook', 'cluster.yml'],
      env: {},
      files: [
        { path: 'inventory.ini', content: '[all]\n' },
        { path: 'id_rsa', content: 'a private key', mode: 0o400 },
      ],
      nodeAddresses: ['10.0.0.1'],
      deadlineSeconds: 60,
    };
    const runner = { ...DEFAULT_RUNNER_SETTINGS, image: 'runner', namespace: engineNamespace };
    await core.createNamespacedSecret({
      namespace: engineNamespace,
      body: bundleSecret(run, runner),
    });
    const job = { apiVersion: 'batch/v1', kind: 'Job', name: run.name, uid: `uid-${sfx}` };
    await core.patchNamespacedSecret(
      {
        name: run.name,
        namespace: engineNamespace,
        body: { metadata: { ownerReferences: [job] } },
      },
      MERGE_PATCH,
    );
    expect(
      await apiAnswer(
        core.createNamespacedSecret({
          namespace: ns,
          body: bundleSecret(run, { ...runner, namespace: ns }),
        }),
      ),
    ).toMatch(
      new RegExp(
        `^403: .*may not create Secret ${ns}/${run.name}: it lacks the name, marks or keys .*` +
          'runner bundles hostflow-run-<digest> .* in a namespace labelled hostflow.dev/runners=true',
      ),
    );
  });

  it('cannot write a ConfigMap the engine does not own, and is told why', async () => {
    const tenants = await scope.kube.core.createNamespacedConfigMap({
      namespace: scope.namespace,
      body: { metadata: { name: 'settings' }, data: { mode: 'tenant' } },
    });
    const answers = {
      "EKS's aws-auth (IAM to cluster-admin)": await apiAnswer(
        as.worker.core.createNamespacedConfigMap({
          namespace: 'kube-system',
          body: {
            metadata: { name: `aws-auth-${sfx}` },
            data: { mapRoles: '- groups: [system:masters]' },
          },
        }),
      ),
      "the tenant's own ConfigMap": await apiAnswer(
        as.worker.core.replaceNamespacedConfigMap({
          namespace: scope.namespace,
          name: 'settings',
          body: { ...tenants, data: { mode: 'engine' } },
        }),
      ),
      'an IP map with a key the engine never writes': await apiAnswer(
        as.worker.core.createNamespacedConfigMap({
          namespace: scope.namespace,
          body: {
            metadata: {
              name: 'mall-configmap',
              labels: { cluster: 'mall', 'app.kubernetes.io/managed-by': 'hostflow' },
              annotations: { 'hostflow.dev/owner-uid': 'some-uid' },
            },
            data: { 'kube-apiserver-args': '--anonymous-auth=true' },
          },
        }),
      ),
    };
    const refused = (verb: string, where: string, problem: string) =>
      expect.stringMatching(
        new RegExp(
          `^403: .*hostflow \\(${account('worker')}\\) may not ${verb} ConfigMap ${where}: ` +
            `${problem}\\. The engine writes only <cluster>-configmap `,
        ),
      );
    const lacks = 'it lacks the name, marks or keys of every ConfigMap hostflow makes';
    expect(answers).toEqual({
      "EKS's aws-auth (IAM to cluster-admin)": refused(
        'create',
        `kube-system/aws-auth-${sfx}`,
        lacks,
      ),
      "the tenant's own ConfigMap": refused(
        'update',
        `${scope.namespace}/settings`,
        'the ConfigMap there was not made by hostflow, and hostflow replaces only what it made',
      ),
      'an IP map with a key the engine never writes': refused(
        'create',
        `${scope.namespace}/mall-configmap`,
        lacks,
      ),
    });
  });

  it("cannot delete a Node at all: Cluster API core deletes Machines' Nodes, and no family grants it", async () => {
    const name = `rights-node-${sfx}`;
    nodes.push(name);
    await scope.kube.core.createNode({
      body: { metadata: { name }, spec: { providerID: `hostflow://static/host-${sfx}` } },
    });
    expect(await apiAnswer(as.worker.core.deleteNode({ name }))).toMatch(
      new RegExp(`^403: .*cannot delete resource "nodes"`),
    );
    expect(await apiAnswer(scope.kube.core.readNode({ name }))).toBe('allowed');
  });
});

describe('a Lock on a Pod', () => {
  it('refuses its eviction, to a tenant and to the engine, whose drain reports it as blocked', async () => {
    const node = `rights-drained-${sfx}`;
    nodes.push(node);
    await scope.kube.core.createNode({
      body: { metadata: { name: node }, spec: { providerID: `hostflow://static/drained-${sfx}` } },
    });
    for (const name of ['web', 'batch'])
      await scope.kube.core.createNamespacedPod({
        namespace: lockable,
        body: {
          metadata: { name },
          spec: { nodeName: node, containers: [{ name, image: 'registry.invalid/app:1' }] },
        },
      });
    // DELETE only: an eviction is the Pod's deletion, by another door.
    await scope.kube.custom.createNamespacedCustomObject({
      ...LOCK_API,
      namespace: lockable,
      body: {
        apiVersion: `${LOCK_API.group}/${LOCK_API.version}`,
        kind: 'Lock',
        metadata: { name: 'web' },
        spec: { reason: 'it serves the release', operations: ['DELETE'] },
      },
    });
    const tenant = (
      await tenantIdentity(scope.kube.kc, lockable, [
        { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
      ])
    ).makeApiClient(CoreV1Api);
    const evict = (name: string, dryRun?: 'All') =>
      apiAnswer(
        tenant.createNamespacedPodEviction({
          namespace: lockable,
          name,
          ...(dryRun ? { dryRun } : {}),
          body: { metadata: { name, namespace: lockable } },
        }),
      );
    const lockSays = `pods/eviction ${lockable}/web is locked by Lock ${lockable}/web \\(reason: it serves the release\\)`;
    const locked = new RegExp(`^403: .*${lockSays}`);
    // A Lock takes effect once the API server's param cache has it.
    const refused = await waitFor(
      'the eviction of web to be refused',
      async () => {
        const answer = await evict('web', 'All');
        return answer === 'allowed' ? undefined : answer;
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    console.log(`evicting a locked Pod: ${refused}`);
    expect(refused).toMatch(locked);
    expect(await evict('web')).toMatch(locked);
    // The engine's drain (a Machine's, a rollout's): the unlocked Pod goes, the locked one is
    // reported with the Lock's message and stays, as a PodDisruptionBudget's would.
    const pass = await createNodeActivities({ core: as.worker.core }).drainNodeOnce({ node });
    expect(pass).toEqual({
      remaining: 2,
      evicted: [`${lockable}/batch`],
      blocked: [{ pod: `${lockable}/web`, reason: expect.stringMatching(lockSays) }],
    });
    const web = await scope.kube.core.readNamespacedPod({ namespace: lockable, name: 'web' });
    expect(web.metadata?.deletionTimestamp).toBeUndefined();
  });
});
