// A Provisioning's life after its first install, end to end: real bridge and worker processes,
// real SSH hosts registered as metal3 BareMetalHosts, real ansible-playbook, real Locks enforced
// by the API server. The playbooks are the project's stand-in for kubespray
// (local-stack/kubespray-stand-in): real kubespray cannot install Kubernetes on hosts that share
// this machine's kernel and have no systemd. A file on a host breaks or slows that node.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { KubeConfig } from '@kubernetes/client-node';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../local-stack/paths.js';
import { waitFor } from '../local-stack/process.js';
import {
  BAREMETALHOST_API,
  PROVISIONING_API,
  RETRY_ANNOTATION,
  type ProvisioningSpec,
} from '../shared/bpa-api.js';
import { statusCode } from '../shared/kube-errors.js';
import { LOCK_API, LOCKABLE_LABEL } from '../locks/api.js';
import { registerBareMetalHosts, type BareMetalHosts } from './support/baremetal.js';
import { startBridge, startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { runnerPods, watchRunnerJobs } from './support/runner-jobs.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';
import { kubesprayWorkerEnv } from './support/kubespray.js';
import { createScope, type TestScope } from './support/scope.js';
import { answer, refuse } from './support/refusals.js';
import { tenantIdentity } from './support/service-account.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const run = promisify(execFile);
const sfx = uniqueSuffix();
const kubespray = kubesprayWorkerEnv(sfx);
const clustersDir = kubespray.HOSTFLOW_PROVISIONING_DIR;
const workerEnv: NodeJS.ProcessEnv = {
  ...kubespray,
};
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;
/** People without the engine's exemption: Locks apply to them. */
let hostAdmin: CustomObjectsApi;
let clusterAdmin: CustomObjectsApi;

interface Status {
  phase?: string;
  step?: string;
  failedStep?: string;
  workers?: number;
  observedGeneration?: number;
  install?: { playbook?: string; failedHost?: string; failedTask?: string };
  conditions?: Array<{
    type: string;
    status: string;
    reason: string;
    message: string;
    lastTransitionTime?: string;
  }>;
}

beforeAll(async () => {
  scope = await createScope('provlc');
  const { kc } = kube();
  metal = await registerBareMetalHosts(scope, { count: 3, sfx, lockable: true });
  await scope.kube.core.patchNamespace(
    {
      name: scope.namespace,
      body: { metadata: { labels: { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value } } },
    },
    MERGE_PATCH,
  );
  const person = async (namespace: string, group: string, resource: string) =>
    (
      await tenantIdentity(kc as KubeConfig, namespace, [
        { apiGroups: [group], resources: [resource], verbs: ['*'] },
      ])
    ).makeApiClient(CustomObjectsApi);
  hostAdmin = await person(metal.namespace, BAREMETALHOST_API.group, BAREMETALHOST_API.plural);
  clusterAdmin = await person(scope.namespace, PROVISIONING_API.group, PROVISIONING_API.plural);
  // Other test files register hosts too, in their own namespaces: these are this file's.
  workerEnv.HOSTFLOW_BAREMETAL_NAMESPACE = metal.namespace;
  worker = await startWorker(scope, workerEnv);
  bridge = await startBridge(scope);
}, 120_000);

afterAll(() => tearDown([bridge, worker], metal, scope));

const provisioning = { ...PROVISIONING_API, namespace: '' };
const ns = () => scope.namespace;

/** Whether host `index`'s admin user still trusts `cluster`'s installer key. */
async function trustsInstallerKey(index: number, cluster: string): Promise<boolean> {
  const secret = await scope.kube.core.readNamespacedSecret({
    namespace: ns(),
    name: `${cluster}-ssh-key`,
  });
  const key = Buffer.from(secret.data!['id_rsa.pub']!, 'base64').toString('utf8').trim();
  const host = metal.pool.hosts[index]!;
  const found = await host.exec(['sh', '-c', `cat ~${host.adminUser}/.ssh/authorized_keys`]);
  return found.stdout.split('\n').includes(key);
}

async function create(name: string, cluster: string, spec: ProvisioningSpec): Promise<void> {
  await scope.kube.custom.createNamespacedCustomObject({
    ...provisioning,
    namespace: ns(),
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      metadata: { name, labels: { cluster } },
      spec,
    },
  });
}

const patchSpec = (name: string, spec: ProvisioningSpec, as = scope.kube.custom) =>
  as.patchNamespacedCustomObject(
    { ...provisioning, namespace: ns(), name, body: { spec } },
    MERGE_PATCH,
  );

const status = async (name: string): Promise<Status | undefined> =>
  (
    (await scope.kube.custom.getNamespacedCustomObject({
      ...provisioning,
      namespace: ns(),
      name,
    })) as {
      status?: Status;
    }
  ).status;

/** Waits until the status satisfies `done`. */
const until = (name: string, what: string, done: (status: Status) => boolean) =>
  waitFor(
    `Provisioning ${name}: ${what}`,
    async () => {
      const found = await status(name);
      return found && done(found) ? found : undefined;
    },
    { timeoutMs: 150_000, intervalMs: 250 },
  );

const readyAt = (generation: number, reason: string) => (s: Status) =>
  s.phase === 'Ready' &&
  s.observedGeneration === generation &&
  s.conditions?.[0]?.reason === reason;

const events = async (name: string, reason: string) =>
  (await scope.kube.core.listNamespacedEvent({ namespace: ns() })).items.filter(
    (e) => e.involvedObject.name === name && e.reason === reason,
  );

/** The answer to a person's request: `allowed`, or the API server's refusal. */

const deleteHost = (index: number) =>
  answer(
    hostAdmin.deleteNamespacedCustomObject({
      ...BAREMETALHOST_API,
      namespace: metal.namespace,
      name: `node-${index}`,
      dryRun: 'All',
    }),
  );

const lockOf = (index: number) =>
  scope.kube.custom
    .getNamespacedCustomObject({ ...LOCK_API, namespace: metal.namespace, name: `node-${index}` })
    .then(
      () => true,
      (err: unknown) => (statusCode(err) === 404 ? false : Promise.reject(err)),
    );

async function deleteAndWait(name: string): Promise<void> {
  await scope.kube.custom.deleteNamespacedCustomObject({ ...provisioning, namespace: ns(), name });
  await waitFor(
    `${name} to go`,
    () =>
      scope.kube.custom.getNamespacedCustomObject({ ...provisioning, namespace: ns(), name }).then(
        () => undefined,
        (err: unknown) => (statusCode(err) === 404 ? true : Promise.reject(err)),
      ),
    { timeoutMs: 150_000 },
  );
}

const hostflow = (...args: string[]) =>
  run(process.execPath, [join(REPO_ROOT, 'dist/cli/hostflow.js'), ...args]).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (err: { code: number; stderr: string }) => ({ code: err.code, output: err.stderr }),
  );

/**
 * A hostile tenant: a second Provisioning labelled with an installed cluster's name. The name
 * gives it nothing: deleting it leaves that cluster's ConfigMap, kubeconfig and installer key,
 * and a Warning Event on it says why.
 */
async function squatterLeavesOutputsAlone(cluster: string): Promise<void> {
  const outputs = {
    configMap: `${cluster}-configmap`,
    secrets: [`${cluster}-kubeconfig`, `${cluster}-ssh-key`],
  };
  const present = async () => {
    const { core } = scope.kube;
    const found = (read: Promise<unknown>) =>
      read.then(
        () => true,
        () => false,
      );
    return [
      await found(core.readNamespacedConfigMap({ namespace: ns(), name: outputs.configMap })),
      ...(await Promise.all(
        outputs.secrets.map((name) => found(core.readNamespacedSecret({ namespace: ns(), name }))),
      )),
    ];
  };
  expect(await present()).toEqual([true, true, true]);
  await create('squatter', cluster, { masters: [{ m: { 'mac-address': '02:00:00:00:00:99' } }] });
  await until('squatter', 'refused', (s) => s.phase === 'Refused');
  await deleteAndWait('squatter');
  expect(await present()).toEqual([true, true, true]);
  const notOwned = (await events('squatter', 'NotOwned')).map((e) => e.message).sort();
  expect(notOwned).toEqual([
    `ConfigMap ${ns()}/${outputs.configMap} was left alone: it does not carry hostflow's mark for Provisioning ${ns()}/squatter (annotation hostflow.dev/owner-uid or an ownerReference with its uid); hostflow did not delete it`,
    ...outputs.secrets.map(
      (name) =>
        `Secret ${ns()}/${name} was left alone: it does not carry hostflow's mark for Provisioning ${ns()}/squatter (annotation hostflow.dev/owner-uid or an ownerReference with its uid); hostflow did not delete it`,
    ),
  ]);
}

describe('an installed Provisioning', () => {
  it('drops a worker with remove-node.yml and adds one with scale.yml; the hosts it holds cannot be deleted', async () => {
    const [mac0, mac1, mac2] = metal.macs;
    await create('lc', 'cluster-lc', {
      masters: [{ m: { 'mac-address': mac0! } }],
      workers: [{ w1: { 'mac-address': mac1! } }, { w2: { 'mac-address': mac2! } }],
    });
    const installed = await until('lc', 'installed', readyAt(1, 'Installed'));
    await squatterLeavesOutputsAlone('cluster-lc');
    expect(await deleteHost(2)).toMatch(
      /^403: .*is locked by Lock .*node w2 of cluster cluster-lc/,
    );

    await patchSpec('lc', { workers: [{ w1: { 'mac-address': mac1! } }] });
    const down = await until('lc', 'scaled down', readyAt(2, 'Scaled'));
    expect(down.workers).toBe(1);
    expect(down.conditions?.[0]?.message).toBe('cluster cluster-lc has 2 nodes; removed w2');
    // Ready stayed True through the scale: its transition time is the install's.
    expect(down.conditions?.[0]?.lastTransitionTime).toBe(
      installed.conditions?.[0]?.lastTransitionTime,
    );
    expect([await metal.marker(0), await metal.marker(1), await metal.marker(2)]).toEqual([
      'm in cluster-lc',
      'w1 in cluster-lc',
      '',
    ]);
    expect(await metal.consumerOf(2)).toBeUndefined();
    expect(await lockOf(2)).toBe(false);
    expect(await deleteHost(2)).toBe('allowed');
    // The host w2 left takes the cluster's installer key with it; the others keep it.
    expect([
      await trustsInstallerKey(0, 'cluster-lc'),
      await trustsInstallerKey(1, 'cluster-lc'),
      await trustsInstallerKey(2, 'cluster-lc'),
    ]).toEqual([true, true, false]);

    // By resources: the 12-CPU host is the only one left that fits.
    await patchSpec('lc', { workers: [{ w1: { 'mac-address': mac1! } }, { w3: { cpu: 12 } }] });
    const up = await until('lc', 'scaled up', readyAt(3, 'Scaled'));
    expect(up.workers).toBe(2);
    expect(await metal.marker(2)).toBe('w3 in cluster-lc');
    expect(await metal.consumerOf(2)).toBe(`${ns()}/lc`);
    expect(await lockOf(2)).toBe(true);
    expect((await events('lc', 'Scaled')).map((e) => e.message).sort()).toEqual([
      'cluster cluster-lc has 2 nodes; removed w2',
      'cluster cluster-lc has 3 nodes; added w3',
    ]);

    // The same nodes written differently: a new generation, but no scale is run or reported.
    await patchSpec('lc', {
      workers: [{ w1: { 'mac-address': mac1!.toUpperCase() } }, { w3: { cpu: 12 } }],
    });
    const same = await until('lc', 'unchanged', readyAt(4, 'Unchanged'));
    expect(same.conditions?.[0]?.message).toBe(
      'cluster cluster-lc has 3 nodes: the spec asks for the nodes it has; no playbook ran',
    );
    expect(await events('lc', 'Scaled')).toHaveLength(2);

    // Every worker removed from a master that does not work: refused as what it means, naming
    // the master it leaves and why it would change (a dual-role master is scaled down to: below).
    await patchSpec('lc', { workers: [] });
    const noWorkers = await until('lc', 'no workers refused', readyAt(5, 'ChangeRefused'));
    expect(noWorkers.conditions?.[0]?.message).toBe(
      'removing every worker (w1, w3) leaves master m alone, and a cluster without workers runs its workloads on its masters: m is a master only and would become a worker too, which an installed cluster cannot change: keep at least one worker, or delete and re-create the Provisioning; the cluster runs as last installed',
    );

    // What kubespray cannot change on a live cluster is refused; the cluster runs on.
    await patchSpec('lc', {
      masters: [{ 'm-renamed': { 'mac-address': mac0! } }],
      workers: [{ w1: { 'mac-address': mac1! } }, { w3: { cpu: 12 } }],
    });
    const refused = await until('lc', 'change refused', readyAt(6, 'ChangeRefused'));
    expect(refused.conditions?.[0]?.message).toMatch(
      /the masters of an installed cluster cannot change .*; the cluster runs as last installed$/,
    );
    expect(await metal.marker(0)).toBe('m in cluster-lc');

    await deleteAndWait('lc');
    expect([await metal.marker(0), await metal.marker(1), await metal.marker(2)]).toEqual([
      '',
      '',
      '',
    ]);
    expect([await lockOf(0), await lockOf(1), await lockOf(2)]).toEqual([false, false, false]);
  }, 300_000);

  it('stays Failed with its hosts until on-call fixes the cause and retries, resuming at the failed step', async () => {
    const [mac0, mac1] = metal.macs;
    const broken = [
      'sh',
      '-c',
      'echo "disk /dev/sdb is read-only" > /var/tmp/hostflow-stand-in-broken',
    ];
    await metal.pool.hosts[1]!.exec(broken);
    await create('rt', 'cluster-rt', {
      masters: [{ m: { 'mac-address': mac0! } }],
      workers: [{ w: { 'mac-address': mac1! } }],
    });
    const failed = await until('rt', 'failed', (s) => s.phase === 'Failed');
    expect(failed.failedStep).toBe('Run kubespray cluster.yml');
    expect(failed.install).toMatchObject({ failedHost: 'w', failedTask: 'Check the node' });
    expect(failed.conditions?.[0]).toMatchObject({
      reason: 'InstallFailed',
      message: expect.stringMatching(
        /^kubespray cluster\.yml failed on host w at task "Check the node": disk \/dev\/sdb is read-only/,
      ),
    });
    expect(await metal.consumerOf(1)).toBe(`${ns()}/rt`);

    // The CLI checks what it is given before touching anything.
    expect(await hostflow('retry', 'provisioning', 'not-a-name')).toMatchObject({
      code: 2,
      output: expect.stringContaining('"not-a-name" is not NAMESPACE/NAME of a Provisioning'),
    });
    const kubeconfig = testEnv('kubeconfig');
    expect(
      await hostflow('retry', 'provisioning', `${ns()}/missing`, '--kubeconfig', kubeconfig),
    ).toMatchObject({
      code: 1,
      output: expect.stringContaining(`no Provisioning ${ns()}/missing`),
    });

    await metal.pool.hosts[1]!.exec(['rm', '/var/tmp/hostflow-stand-in-broken']);
    const retried = await hostflow(
      'retry',
      'provisioning',
      `${ns()}/rt`,
      '--kubeconfig',
      kubeconfig,
    );
    expect(retried).toMatchObject({ code: 0, output: expect.stringContaining(RETRY_ANNOTATION) });
    const ready = await until('rt', 'installed', readyAt(1, 'Installed'));
    expect(ready.failedStep).toBeUndefined();
    expect(ready.install).toEqual({ playbook: 'cluster.yml', log: expect.any(String) });
    expect(await metal.marker(1)).toBe('w in cluster-rt');
    expect(await events('rt', 'Retrying')).toHaveLength(1);

    // Both runs are in the history; the key was handed out once: it resumed, not restarted.
    const history = await scope.temporal.client.workflow
      .getHandle(`provisioning/${ns()}/rt`)
      .fetchHistory();
    const scheduled = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter(Boolean);
    expect(scheduled.filter((type) => type === 'runPlaybook')).toHaveLength(2);
    expect(scheduled.filter((type) => type === 'authorizeInstallerKey')).toHaveLength(1);
    await deleteAndWait('rt');
  }, 300_000);

  it('survives its worker killed mid-playbook: its run goes on as a Job, and the next worker follows it to the install', async () => {
    const [, , mac2] = metal.macs;
    const node = metal.pool.hosts[2]!;
    await node.exec(['sh', '-c', 'echo 15 > /var/tmp/hostflow-stand-in-slow']);
    const jobs = watchRunnerJobs(`${ns()}/cluster-kl`);
    await create('kl', 'cluster-kl', { masters: [{ solo: { 'mac-address': mac2! } }] });
    await until('kl', 'running kubespray', (s) => s.step === 'Run kubespray cluster.yml');
    await waitFor('its runner pod to run', async () =>
      (await runnerPods(`${ns()}/cluster-kl`)).some((pod) => pod.status?.phase === 'Running')
        ? true
        : undefined,
    );
    // Its spec is locked while kubespray runs.
    expect(await answer(patchSpec('kl', { PodSubnet: '10.9.0.0/16' }, clusterAdmin))).toMatch(
      /^403: .*is locked by Lock .*kubespray cluster\.yml is running for cluster cluster-kl/,
    );

    process.kill(worker.pid, 'SIGKILL'); // the worker only: its run is a Job, and goes on
    await worker.exited;
    await node.exec(['rm', '/var/tmp/hostflow-stand-in-slow']);
    worker = await startWorker(scope, workerEnv);
    await until('kl', 'installed', readyAt(1, 'Installed'));
    expect(await metal.marker(2)).toBe('solo in cluster-kl');
    await jobs.stop();
    // The retried attempt found the run's Job (named from the activity's run), not a second one.
    expect(jobs.whats().filter((what) => what === 'kubespray cluster.yml')).toHaveLength(1);
    // Each attempt kept its own copy of the log it followed.
    const logs = join(clustersDir, '.logs', ns(), 'cluster-kl');
    expect(readdirSync(logs).filter((file) => file.startsWith('cluster.')).length).toBeGreaterThan(
      1,
    );
    const history = await scope.temporal.client.workflow
      .getHandle(`provisioning/${ns()}/kl`)
      .fetchHistory();
    const attempts = (history.events ?? [])
      .map((e) => e.activityTaskStartedEventAttributes?.attempt)
      .filter((attempt) => attempt !== undefined && attempt !== null);
    expect(Math.max(...(attempts as number[]))).toBeGreaterThanOrEqual(2);
    await deleteAndWait('kl');
    expect(await metal.consumerOf(2)).toBeUndefined();
  }, 300_000);
});

describe('a Provisioning whose namespace refuses what it writes', () => {
  it('fails the step at once with a Forbidden condition and Event, and resumes once allowed', async () => {
    const [mac0] = metal.macs;
    const kubeconfigSecret = 'cluster-fb-kubeconfig';
    const lift = await refuse(
      scope.kube.kc,
      {
        apiGroup: '',
        resource: 'secrets',
        operations: ['CREATE'],
        namespace: ns(),
        names: [kubeconfigSecret],
        reason: 'Forbidden',
        message: 'this namespace keeps no kubeconfigs',
      },
      () =>
        scope.kube.core.createNamespacedSecret({
          namespace: ns(),
          body: { metadata: { name: kubeconfigSecret } },
          dryRun: 'All',
        }),
    );
    let lifted = false;
    try {
      await create('fb', 'cluster-fb', { masters: [{ m: { 'mac-address': mac0! } }] });
      const failed = await until('fb', 'failed', (s) => s.phase === 'Failed');
      const expected = new RegExp(
        `^Run kubespray cluster\\.yml: write Secret ${ns()}/${kubeconfigSecret}: .*this namespace keeps no kubeconfigs.*Free the namespace's ResourceQuota or change the admission policy`,
      );
      expect(failed.failedStep).toBe('Run kubespray cluster.yml');
      expect(failed.conditions?.[0]).toMatchObject({
        type: 'Ready',
        status: 'False',
        reason: 'Forbidden',
        message: expect.stringMatching(expected),
      });
      // The API server's message, never the kubeconfig it refused.
      expect(failed.conditions?.[0]?.message).not.toMatch(/client-key-data|BEGIN|certificate/);
      // The Event is written after the status: wait for it rather than read once.
      const warned = await waitFor('the Forbidden Event of fb', async () => {
        const found = await events('fb', 'Forbidden');
        return found.length ? found : undefined;
      });
      expect(warned.map((e) => [e.type, e.message])).toEqual([
        ['Warning', expect.stringMatching(expected)],
      ]);
      // Refused for good: kubespray ran once, not again on every retry of the write.
      const history = await scope.temporal.client.workflow
        .getHandle(`provisioning/${ns()}/fb`)
        .fetchHistory();
      const runs = (history.events ?? []).filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runPlaybook',
      );
      const attempts = (history.events ?? [])
        .map((e) => e.activityTaskStartedEventAttributes?.attempt)
        .filter((attempt) => attempt !== undefined && attempt !== null);
      expect([runs.length, Math.max(...(attempts as number[]))]).toEqual([1, 1]);
      // Its spec is no longer locked; its host is kept for the retry, as for any failed step.
      const change = clusterAdmin.patchNamespacedCustomObject(
        {
          ...provisioning,
          namespace: ns(),
          name: 'fb',
          body: { spec: { PodSubnet: '10.9.0.0/16' } },
          dryRun: 'All',
        },
        MERGE_PATCH,
      );
      expect(await answer(change)).toBe('allowed');
      expect(await metal.consumerOf(0)).toBe(`${ns()}/fb`);

      await lift();
      lifted = true;
      const retried = await hostflow(
        'retry',
        'provisioning',
        `${ns()}/fb`,
        '--kubeconfig',
        testEnv('kubeconfig'),
      );
      expect(retried.code).toBe(0);
      const ready = await until('fb', 'installed', readyAt(1, 'Installed'));
      expect((ready as { kubeconfigSecret?: string }).kubeconfigSecret).toBe(kubeconfigSecret);
    } finally {
      if (!lifted) await lift();
    }
    await deleteAndWait('fb');
    expect(await metal.consumerOf(0)).toBeUndefined();
  }, 300_000);
});

describe('a Provisioning workflow at its history limit', () => {
  it('continues as new while it waits, and still scales (down to its dual-role master and up again) and tears down what it installed', async () => {
    const [mac0, mac1, mac2] = metal.macs;
    const masters = [{ m: { 'mac-address': mac0! } }];
    // m is a master and a worker: it works before and after any scale.
    const m = { m: { 'mac-address': mac0! } };
    const w1 = { w1: { 'mac-address': mac1! } };
    const each = (of: (index: number) => Promise<unknown>) => Promise.all([0, 1, 2].map(of));
    await bridge.stop();
    // A relist every 5 s (the shortest allowed) is what an idle Provisioning hears.
    bridge = await startBridge(scope, {
      HOSTFLOW_PROVISIONING_MAX_HISTORY: '10',
      HOSTFLOW_RESYNC_SECONDS: '5',
    });
    try {
      await create('ca', 'cluster-ca', { masters, workers: [m, w1] });
      await until('ca', 'installed', readyAt(1, 'Installed'));
      const workflowId = `provisioning/${ns()}/ca`;
      const continued = async () =>
        (
          await scope.temporal.client.workflow.count(
            `WorkflowId = '${workflowId}' AND ExecutionStatus = 'ContinuedAsNew'`,
          )
        ).count;
      // Every relist resends it: the idle workflow's history grows, and it starts afresh. Twice
      // more after the install was seen: at least once with nothing but relists to hear.
      const installedRuns = await continued();
      await waitFor(
        'its run to continue as new while it waits',
        async () => ((await continued()) >= installedRuns + 2 ? true : undefined),
        { timeoutMs: 60_000 },
      );
      // The next run knows the cluster it installed: a new worker is a scale, not an install.
      await patchSpec('ca', { workers: [m, w1, { w2: { 'mac-address': mac2! } }] });
      const scaled = await until('ca', 'scaled', readyAt(2, 'Scaled'));
      expect(scaled.workers).toBe(3);
      expect(scaled.conditions?.[0]?.message).toBe('cluster cluster-ca has 3 nodes; added w2');
      expect(await metal.marker(2)).toBe('w2 in cluster-ca');
      expect(await events('ca', 'Provisioned')).toHaveLength(1);

      // Down to its master alone, which works already: only the workers go (issue 41).
      await patchSpec('ca', { workers: [m] });
      const alone = await until('ca', 'scaled down to m', readyAt(3, 'Scaled'));
      expect([alone.workers, alone.conditions?.[0]?.message]).toEqual([
        1,
        'cluster cluster-ca has 1 node; removed w1, w2',
      ]);
      expect(await each((i) => metal.marker(i))).toEqual(['m in cluster-ca', '', '']);
      expect(await each((i) => metal.consumerOf(i))).toEqual([`${ns()}/ca`, undefined, undefined]);
      // And up again.
      await patchSpec('ca', { workers: [m, w1] });
      const again = await until('ca', 'scaled up again', readyAt(4, 'Scaled'));
      expect([again.workers, again.conditions?.[0]?.message]).toEqual([
        2,
        'cluster cluster-ca has 2 nodes; added w1',
      ]);
      expect(await metal.marker(1)).toBe('w1 in cluster-ca');
      await deleteAndWait('ca');
      // Reset and released: the torn-down hosts are those every run held.
      expect(await each((i) => metal.marker(i))).toEqual(['', '', '']);
      expect(await each((i) => metal.consumerOf(i))).toEqual([undefined, undefined, undefined]);
      expect(await each(lockOf)).toEqual([false, false, false]);
    } finally {
      await bridge.stop();
      bridge = await startBridge(scope);
    }
  }, 300_000);
});
