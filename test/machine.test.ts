// Cluster API Machines on static hosts, end to end: real bridge and worker processes, real SSH
// hosts, the real API server. The bootstrap data is a shell script that registers a Node through
// the API server and writes Cluster API's sentinel (test/support/node-join.ts): it stands in for
// kubeadm join and a kubelet, which cannot run here. With no scheduler and no kubelet, the test
// plays the kubelet's part: it binds each pod to its node (spec.nodeName), reports it Running
// and Ready through the status subresource, and deletes the pods a drain evicted (they would
// stay Terminating). Everything else is real: the stack's kube-controller-manager runs the
// disruption controller, which computes each PodDisruptionBudget's status from those pods, and
// the Eviction API refuses or lets an eviction through by that status.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, PolicyV1Api, StorageV1Api, type V1Pod } from '@kubernetes/client-node';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { setHostDrained } from '../shared/contracts/allocator.js';
import { statusCode } from '../shared/kube-errors.js';
import { LOCK_API } from '../locks/api.js';
import {
  BOOTSTRAP_SENTINEL,
  CONDITION,
  HOSTFLOW_MACHINE_API,
  MACHINE_API,
  MACHINE_FINALIZER,
} from '../shared/machine-api.js';
import { describeJson, hostflowOf, stepsOf } from './support/hostflow-cli.js';
import { Machines } from './support/machines.js';
import { createNodeJoiner, type NodeJoiner } from './support/node-join.js';
import { apiAnswer } from './support/api-answer.js';
import { refuse } from './support/refusals.js';
import { tenantIdentity } from './support/service-account.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

let pool: StaticPool;
let machines: Machines;
let joiner: NodeJoiner;

beforeAll(async () => {
  pool = await createStaticPool('machine', 2);
  await pool.scope.setHostConfig(
    pool.hostEntries([
      { host: 0, concurrency: 1, serves: 'machines' },
      { host: 1, concurrency: 1, serves: 'machines' },
      // A build host of a platform of its own: no Machine may land there.
      { host: 0, name: 'b1', platform: BUILDS_PLATFORM(), serves: 'builds' },
    ]),
  );
  machines = new Machines(pool.scope);
  joiner = await createNodeJoiner(pool.scope);
}, 120_000);

afterAll(async () => {
  machines?.stopWatches();
  await joiner?.dispose();
  await pool?.dispose();
});

const ns = () => pool.scope.namespace;
const BUILDS_PLATFORM = () => `${pool.platform}-builds`;

/**
 * A host a Machine ran on stays drained after the Machine is gone, saying why: the operator's
 * part is played here (`hostflow host undrain`), once `count` hosts wait for it.
 */
async function undrainAfterMachines(count: number): Promise<string[]> {
  const drained = await waitFor(`${count} hosts drained after their Machines`, async () => {
    const hosts = (await pool.allocator()).hosts.filter(
      (h) => h.drained && h.inUse === 0 && h.drainedBecause,
    );
    return hosts.length >= count ? hosts : undefined;
  });
  const allocator = pool.scope.temporal.client.workflow.getHandle(
    WORKFLOW_ID.allocator(pool.platform),
  );
  for (const host of drained) {
    await allocator.executeUpdate(setHostDrained, { args: [{ host: host.name, drained: false }] });
  }
  return drained.map((h) => h.drainedBecause!);
}
const core = () => pool.scope.kube.core;
const policy = () => pool.scope.kube.kc.makeApiClient(PolicyV1Api);
const hostOf = (providerID: string | undefined) =>
  pool.hosts[Number(/^hostflow:\/\/static\/h(\d+)$/.exec(providerID ?? '')?.[1] ?? 0) - 1]!;
const sentinelOn = async (index: number) =>
  (await pool.hosts[index]!.exec(['test', '-f', BOOTSTRAP_SENTINEL])).code === 0;
const readNode = (name: string) =>
  core()
    .readNode({ name })
    .then(
      (node) => node,
      (err: unknown) => (statusCode(err) === 404 ? undefined : Promise.reject(err)),
    );

/**
 * A pod running on the node (no scheduler, no kubelet: it is only an object). It is made Running
 * and Ready as a kubelet would report it, since the Eviction API lets a Pending pod go whatever
 * its budget says.
 */
async function podOn(
  node: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  const body: V1Pod = {
    metadata: { name, labels },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.invalid/app:1' }] },
  };
  const pod = await core().createNamespacedPod({ namespace: ns(), body });
  const now = new Date();
  await core().replaceNamespacedPodStatus({
    namespace: ns(),
    name,
    body: {
      ...pod,
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
        startTime: now,
      },
    },
  });
}

/** The kubelet's part: a pod the drain evicted (Terminating) goes away. */
async function actAsKubelet(): Promise<void> {
  for (const pod of (await core().listNamespacedPod({ namespace: ns() })).items) {
    if (pod.metadata?.deletionTimestamp)
      await core()
        .deleteNamespacedPod({ namespace: ns(), name: pod.metadata.name!, gracePeriodSeconds: 0 })
        .catch(() => undefined);
  }
}

/**
 * A PodDisruptionBudget keeping `minAvailable` pods labelled `app`, once the disruption
 * controller has counted `healthy` of them (its status is what the Eviction API reads).
 */
async function pdb(name: string, app: string, minAvailable: number, healthy: number) {
  await policy().createNamespacedPodDisruptionBudget({
    namespace: ns(),
    body: { metadata: { name }, spec: { minAvailable, selector: { matchLabels: { app } } } },
  });
  return budgetCounts(name, healthy);
}

/** The budget's status once the disruption controller counts `healthy` pods for it. */
function budgetCounts(name: string, healthy: number) {
  return waitFor(`PodDisruptionBudget ${name} to count ${healthy} healthy pods`, async () => {
    const { metadata, status } = await policy().readNamespacedPodDisruptionBudget({
      namespace: ns(),
      name,
    });
    const current = status?.observedGeneration === metadata?.generation;
    return current && status?.currentHealthy === healthy ? status : undefined;
  });
}

describe('a Machine on a static host', () => {
  let nodeName = '';
  let providerID = '';

  it('is Pending until its bootstrap data exists, then Provisioning, Provisioned and Running', async () => {
    const phases = await machines.recordPhases('m1');
    await machines.create('m1', { platform: pool.platform });
    const pending = await machines.until(
      'm1',
      'to wait for its data',
      (m) => machines.condition(m, CONDITION.bootstrapReady)?.reason === 'WaitingForDataSecret',
    );
    expect(pending.status?.phase).toBe('Pending');
    expect(pending.metadata.finalizers).toEqual([MACHINE_FINALIZER]);
    expect(pending.spec.providerID).toBeUndefined();
    expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);

    // As a bootstrap provider makes it: for this Machine, so its deletion deletes it.
    await machines.bootstrapSecret('m1-bootstrap', joiner.script(), 'm1');
    const running = await machines.phase('m1', 'Running');
    expect(await phases.upTo('Running')).toEqual([
      'Pending',
      'Provisioning',
      'Provisioned',
      'Running',
    ]);
    providerID = running.spec.providerID!;
    expect(providerID).toMatch(/^hostflow:\/\/static\/h[12]$/);
    nodeName = running.status!.nodeRef!.name;
    expect((await readNode(nodeName))?.spec?.providerID).toBe(providerID);
    expect(running.status?.addresses).toContainEqual({
      type: 'InternalIP',
      address: hostOf(providerID).address,
    });
    expect(running.status).toMatchObject({ bootstrapReady: true, infrastructureReady: true });
    for (const type of [
      CONDITION.ready,
      CONDITION.bootstrapReady,
      CONDITION.infrastructureReady,
      CONDITION.nodeHealthy,
    ])
      expect(machines.condition(running, type)?.status).toBe('True');
    expect(await hostOf(providerID).exec(['test', '-f', BOOTSTRAP_SENTINEL])).toMatchObject({
      code: 0,
    });
    await machines.eventsInclude('m1', 'Provisioned', 'Bootstrapped', 'NodeJoined');

    // Findable in the UI by one query on its search attributes.
    const query =
      `HostflowKind = 'machine' AND K8sNamespace = '${ns()}' AND K8sName = 'm1' AND ` +
      `ClusterName = 'workload' AND ProviderID = '${providerID}' AND Phase = 'Running'`;
    const found = await waitFor('the Machine by its search attributes', async () => {
      const ids: string[] = [];
      for await (const w of pool.scope.temporal.client.workflow.list({ query }))
        ids.push(w.workflowId);
      return ids.length ? ids : undefined;
    });
    expect(found).toEqual([WORKFLOW_ID.machine(ns(), 'm1')]);
  }, 120_000);

  it('hostflow describe machine: its host, providerID, node, phases and steps', async () => {
    const d = await describeJson(pool.scope, 'machine', `${ns()}/m1`);
    expect(d).toMatchObject({
      kind: 'Machine',
      object: `${ns()}/m1`,
      workflowId: WORKFLOW_ID.machine(ns(), 'm1'),
      status: 'RUNNING',
      phase: 'Running',
      facts: {
        cluster: 'workload',
        host: /h\d$/.exec(providerID)![0],
        providerID,
        node: nodeName,
        failure: null,
      },
      error: null,
      notes: [],
    });
    expect(stepsOf(d)).toEqual(
      expect.arrayContaining([
        'signal machineObserved',
        'local activity setMachineProviderId completed',
        'phase Pending',
        'phase Provisioned',
        'phase Running',
      ]),
    );
    // Its phases in the order they came.
    expect(d.timeline.filter((s) => s.kind === 'phase').map((s) => s.name)).toEqual([
      'Pending',
      'Provisioning',
      'Provisioned',
      'Running',
    ]);
    const { stdout } = await hostflowOf(pool.scope, 'describe', 'ma', `${ns()}/m1`);
    expect(stdout).toMatch(
      new RegExp(`^ProviderID: +${providerID.replace(/[/.]/g, '\\$&')}$`, 'm'),
    );
    expect(stdout).toMatch(new RegExp(`^Node: +${nodeName}$`, 'm'));
    expect(stdout).toMatch(
      new RegExp(`^  Machine ${ns()}/m1 \\(Running\\): Node ${nodeName}`, 'm'),
    );
  });

  it('deletes in order: pre-drain hook, drain a PDB holds up, pre-terminate hook, then host, Secret, Node, finalizer', async () => {
    await podOn(nodeName, 'web-1', { app: 'web' });
    await podOn(nodeName, 'web-2', { app: 'web' });
    expect((await pdb('web', 'web', 1, 2)).disruptionsAllowed).toBe(1);
    await machines.annotate('m1', {
      'pre-drain.delete.hook.machine.cluster.x-k8s.io/etcd': 'kcp',
      'pre-terminate.delete.hook.machine.cluster.x-k8s.io/backup': 'ops',
    });
    await machines.delete('m1');
    const hooked = await machines.until(
      'm1',
      'to wait for its pre-drain hook',
      (m) =>
        machines.condition(m, CONDITION.preDrainHookSucceeded)?.reason === 'WaitingExternalHook',
    );
    expect(hooked.status?.phase).toBe('Deleting');
    expect((await readNode(nodeName))?.spec?.unschedulable).toBeFalsy(); // not cordoned yet

    await machines.annotate('m1', { 'pre-drain.delete.hook.machine.cluster.x-k8s.io/etcd': null });
    const blocked = await machines.until('m1', 'to say what blocks the drain', (m) =>
      /disruption budget/i.test(machines.condition(m, CONDITION.drainingSucceeded)?.message ?? ''),
    );
    expect(machines.condition(blocked, CONDITION.drainingSucceeded)?.reason).toBe('Draining');
    expect((await readNode(nodeName))?.spec?.unschedulable).toBe(true);
    // The budget let exactly one of the two go; the other waits for a replacement.
    const evicting = (await core().listNamespacedPod({ namespace: ns() })).items.filter(
      (p) => p.metadata?.deletionTimestamp,
    );
    expect(evicting).toHaveLength(1);

    // Locked while it drains: an operator may neither uncordon nor delete it (dry run).
    const operator = (
      await tenantIdentity(
        pool.scope.kube.kc,
        ns(),
        [],
        [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch', 'delete'] }],
      )
    ).makeApiClient(CoreV1Api);
    const holder = WORKFLOW_ID.machine(ns(), 'm1');
    const locked = new RegExp(
      `^403: .*nodes ${nodeName} is locked by Lock cluster-locks/${nodeName} \\(reason: Machine ${ns()}/m1 drains and deletes it\\); ` +
        `held by hostflow workflow ${holder.replace(/[/.]/g, '\\$&')}, which releases it once its work on it is done\\. ` +
        `To unlock: kubectl -n cluster-locks delete lock ${nodeName}$`,
    );
    const uncordon = { spec: { unschedulable: false } };
    expect(
      await apiAnswer(
        operator.patchNode({ name: nodeName, body: uncordon, dryRun: 'All' }, MERGE_PATCH),
      ),
    ).toMatch(locked);
    expect(await apiAnswer(operator.deleteNode({ name: nodeName, dryRun: 'All' }))).toMatch(locked);

    // A replacement runs elsewhere: two healthy again, so the budget lets the second one go.
    await podOn('elsewhere', 'web-3', { app: 'web' });
    await waitFor('web-1 and web-2 to be evicted', async () => {
      await actAsKubelet();
      const left = (
        await core().listNamespacedPod({
          namespace: ns(),
          fieldSelector: `spec.nodeName=${nodeName}`,
        })
      ).items;
      return left.length === 0 ? true : undefined;
    });
    await core().deleteNamespacedPod({ namespace: ns(), name: 'web-3', gracePeriodSeconds: 0 });
    await machines.until(
      'm1',
      'to wait for its pre-terminate hook',
      (m) =>
        machines.condition(m, CONDITION.preTerminateHookSucceeded)?.reason ===
        'WaitingExternalHook',
    );
    expect(await hostOf(providerID).exec(['test', '-f', BOOTSTRAP_SENTINEL])).toMatchObject({
      code: 0,
    });

    await machines.annotate('m1', {
      'pre-terminate.delete.hook.machine.cluster.x-k8s.io/backup': null,
    });
    await machines.gone('m1');
    // A hostile tenant's bootstrap ran as root there: the host takes no new work by itself.
    expect(await undrainAfterMachines(1)).toEqual([
      expect.stringMatching(/ran its bootstrap data there as root; reinstall or wipe the host/),
    ]);
    expect(await readNode(nodeName)).toBeUndefined();
    expect(
      await core()
        .readNamespacedSecret({ namespace: ns(), name: 'm1-bootstrap' })
        .catch((e: unknown) => statusCode(e)),
    ).toBe(404);
    expect(await hostOf(providerID).exec(['test', '-f', BOOTSTRAP_SENTINEL])).toMatchObject({
      code: 1,
    });
    const lock = await pool.scope.kube.custom
      .getNamespacedCustomObject({ ...LOCK_API, namespace: 'cluster-locks', name: nodeName })
      .catch((err: unknown) => statusCode(err));
    expect(lock).toBe(404); // let go once the Node was deleted
    const infra = await pool.scope.kube.custom
      .getNamespacedCustomObject({ ...HOSTFLOW_MACHINE_API, namespace: ns(), name: 'm1' })
      .catch((err: unknown) => statusCode(err));
    expect(infra).toBe(404); // deleted with the host given back, as Cluster API does
    const reasons = await machines.eventReasons('m1');
    const order = ['Deleting', 'WaitingExternalHook', 'SuccessfulDrainNode', 'Deleted'];
    expect(reasons.filter((r) => order.includes(r))).toEqual([
      'Deleting',
      'WaitingExternalHook',
      'SuccessfulDrainNode',
      'WaitingExternalHook',
      'Deleted',
    ]);
  }, 120_000);

  it('stops while paused, and skips what the skip annotations and the drain timeout say', async () => {
    await machines.bootstrapSecret('m2-bootstrap', joiner.script());
    await machines.bootstrapSecret('m3-bootstrap', joiner.script());
    await machines.create('m2', {
      platform: pool.platform,
      annotations: {
        'cluster.x-k8s.io/paused': '',
        'machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach': '',
      },
      spec: { nodeDrainTimeout: '2s' },
    });
    await machines.create('m3', {
      platform: pool.platform,
      annotations: { 'machine.cluster.x-k8s.io/exclude-node-draining': '' },
      spec: { nodeVolumeDetachTimeout: '2s' },
    });
    const paused = await machines.until(
      'm2',
      'to say it is paused',
      (m) => machines.condition(m, 'Paused')?.status === 'True',
    );
    expect(paused.status?.phase).toBe('Pending');
    const m3 = await machines.phase('m3', 'Running');
    expect((await machines.get('m2'))?.spec.providerID).toBeUndefined(); // still nothing made
    await machines.annotate('m2', { 'cluster.x-k8s.io/paused': null });
    const m2 = await machines.phase('m2', 'Running');

    // m2: a pod no budget lets go, and a volume still attached (its wait is skipped).
    // m3: draining skipped, and a volume that stays attached past nodeVolumeDetachTimeout.
    const node2 = m2.status!.nodeRef!.name;
    const node3 = m3.status!.nodeRef!.name;
    await podOn(node2, 'db-1', { app: 'db' });
    expect((await pdb('db', 'db', 1, 1)).disruptionsAllowed).toBe(0); // as many as there are
    await podOn(node3, 'cache-1');
    const storage = pool.scope.kube.kc.makeApiClient(StorageV1Api);
    const attachments = [`${ns()}-m2-vol`, `${ns()}-m3-vol`];
    for (const [name, nodeName] of [
      [attachments[0]!, node2],
      [attachments[1]!, node3],
    ] as const) {
      await storage.createVolumeAttachment({
        body: {
          metadata: { name },
          spec: { attacher: 'csi.example.com', nodeName, source: { persistentVolumeName: name } },
        },
      });
    }
    await machines.delete('m2');
    await machines.delete('m3');
    await machines.gone('m2');
    await machines.gone('m3');
    await undrainAfterMachines(2);
    expect(await machines.eventReasons('m2')).toEqual(
      expect.arrayContaining(['FailedDrainNode', 'Deleted']),
    );
    expect(await machines.eventReasons('m3')).toEqual(
      expect.arrayContaining(['DrainSkipped', 'VolumeDetachTimeout', 'Deleted']),
    );
    expect(await machines.eventReasons('m2')).not.toContain('VolumeDetachTimeout');
    for (const name of attachments) await storage.deleteVolumeAttachment({ name });
    const pods = (await core().listNamespacedPod({ namespace: ns() })).items;
    // Never evicted: db-1 by its budget (then the timeout), cache-1 by the skip annotation.
    expect(pods.map((p) => [p.metadata?.name, !!p.metadata?.deletionTimestamp]).sort()).toEqual([
      ['cache-1', false],
      ['db-1', false],
    ]);
    for (const pod of pods)
      await core().deleteNamespacedPod({
        namespace: ns(),
        name: pod.metadata!.name!,
        gracePeriodSeconds: 0,
      });
  }, 150_000);

  it('is deleted all the same when the bridge was down, and after its worker was killed mid-delete', async () => {
    await machines.bootstrapSecret('m4-bootstrap', joiner.script());
    await machines.create('m4', {
      platform: pool.platform,
      annotations: { 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/hold': '' },
    });
    const m4 = await machines.phase('m4', 'Running');
    await pool.stopBridge();
    await machines.delete('m4');
    await pool.startBridge();
    await machines.until(
      'm4',
      'to wait for its pre-terminate hook',
      (m) =>
        machines.condition(m, CONDITION.preTerminateHookSucceeded)?.reason ===
        'WaitingExternalHook',
    );
    await pool.restartWorker(true); // kill -9 mid-delete
    await machines.annotate('m4', {
      'pre-terminate.delete.hook.machine.cluster.x-k8s.io/hold': null,
    });
    await machines.gone('m4');
    await undrainAfterMachines(1);
    expect(await readNode(m4.status!.nodeRef!.name)).toBeUndefined();
    expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);
  }, 150_000);

  it('says so when no Node joins within nodeStartupTimeout, and is Running once one does', async () => {
    // Bootstrap data that succeeds but registers no Node: a kubelet that never came up.
    await machines.bootstrapSecret(
      'm5-bootstrap',
      `#!/bin/sh\nmkdir -p /run/cluster-api\ntouch ${BOOTSTRAP_SENTINEL}\n`,
    );
    await machines.create('m5', { platform: pool.platform, nodeStartupTimeout: '2s' });
    const late = await machines.until(
      'm5',
      'to say no Node joined',
      (m) => machines.condition(m, CONDITION.nodeHealthy)?.reason === 'NodeNotFound',
    );
    expect(late.status?.phase).toBe('Provisioned');
    expect(machines.condition(late, CONDITION.nodeHealthy)?.message).toMatch(
      new RegExp(`no Node with spec.providerID ${late.spec.providerID} joined within \\d+s`),
    );
    await machines.eventsInclude('m5', 'NodeStartupTimeout');

    // The kubelet's part, late.
    await core().createNode({
      body: { metadata: { name: 'm5-late' }, spec: { providerID: late.spec.providerID } },
    });
    const running = await machines.phase('m5', 'Running', 60_000);
    expect(running.status?.nodeRef?.name).toBe('m5-late');
    await machines.delete('m5');
    await machines.gone('m5');
    await undrainAfterMachines(1);
    expect(await readNode('m5-late')).toBeUndefined();
  }, 120_000);

  it('a hostile tenant: never lands on a build host, and says why', async () => {
    await machines.create('mb', { platform: BUILDS_PLATFORM() });
    await machines.bootstrapSecret('mb-bootstrap', joiner.script());
    // Failed, or (were it let onto the build host) on to Provisioned and Running.
    const settled = await machines.until(
      'mb',
      'to fail or get a host',
      (m) => ['Failed', 'Provisioned', 'Running'].includes(m.status?.phase ?? ''),
      40_000,
    );
    expect({
      phase: settled.status?.phase,
      failureMessage: settled.status?.failureMessage,
    }).toEqual({
      phase: 'Failed',
      failureMessage: expect.stringMatching(
        /no host of this platform serves Cluster API Machines: a Machine runs only on a host with host\.<name>\.serves: machines/,
      ),
    });
    expect((await pool.allocator(BUILDS_PLATFORM())).inUse).toBe(0);
    expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);
    await machines.delete('mb');
    await machines.gone('mb');
  }, 60_000);

  it('leaves a Machine of another provider exactly as it was: no finalizer, status, Event or workflow', async () => {
    type Theirs = {
      metadata: { resourceVersion?: string; finalizers?: string[] };
      status?: unknown;
    };
    const created = (await pool.scope.kube.custom.createNamespacedCustomObject({
      ...MACHINE_API,
      namespace: ns(),
      body: {
        apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
        kind: 'Machine',
        metadata: { name: 'theirs' },
        spec: {
          clusterName: 'workload',
          bootstrap: { dataSecretName: 'theirs-bootstrap' },
          infrastructureRef: {
            apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
            kind: 'AWSMachine',
            name: 'theirs',
          },
        },
      },
    })) as Theirs;
    // A HostflowMachine Machine created after it is served: the bridge has seen both by then.
    await machines.bootstrapSecret('after-theirs-bootstrap', joiner.script());
    await machines.create('after-theirs', {
      platform: pool.platform,
      secret: 'after-theirs-bootstrap',
      spec: { nodeDrainTimeout: 'ten minutes' },
    });
    await machines.phase('after-theirs', 'Failed');
    const now = (await pool.scope.kube.custom.getNamespacedCustomObject({
      ...MACHINE_API,
      namespace: ns(),
      name: 'theirs',
    })) as Theirs;
    expect(now.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    expect(now.metadata.finalizers).toBeUndefined();
    expect(now.status).toBeUndefined();
    expect(await machines.eventReasons('theirs')).toEqual([]);
    const handle = pool.scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.machine(ns(), 'theirs'),
    );
    await expect(handle.describe()).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
    await machines.delete('theirs');
    await machines.gone('theirs');
    await machines.delete('after-theirs');
    await machines.gone('after-theirs');
  }, 60_000);

  it('fails a HostflowMachine Machine whose spec it cannot serve, saying why, and lets go when deleted', async () => {
    await machines.bootstrapSecret('m1-bootstrap-none', joiner.script());
    await machines.create('bad', {
      platform: pool.platform,
      secret: 'm1-bootstrap-none',
      spec: { nodeDrainTimeout: 'ten minutes' },
    });
    const bad = await machines.phase('bad', 'Failed');
    expect(bad.status?.failureReason).toBe('InvalidConfiguration');
    expect(bad.status?.failureMessage).toMatch(
      /spec\.nodeDrainTimeout: "ten minutes" is not a duration/,
    );
    await machines.delete('bad');
    await machines.gone('bad');
  }, 60_000);

  it('fails at once, saying why, when an admission policy refuses its providerID, and gives its host back', async () => {
    const lift = await refuse(
      pool.scope.kube.kc,
      {
        apiGroup: MACHINE_API.group,
        resource: MACHINE_API.plural,
        operations: ['CREATE', 'UPDATE'],
        namespace: ns(),
        picks: 'has(object.spec.providerID)',
        reason: 'Forbidden',
        message: 'this namespace names no providers',
      },
      () =>
        pool.scope.kube.custom.createNamespacedCustomObject({
          ...MACHINE_API,
          namespace: ns(),
          body: {
            apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
            kind: 'Machine',
            metadata: { name: 'probe' },
            spec: {
              clusterName: 'workload',
              bootstrap: { dataSecretName: 'probe' },
              infrastructureRef: { apiVersion: 'v1', kind: 'HostflowMachine', name: 'probe' },
              providerID: 'probe://x',
            },
          },
          dryRun: 'All',
        }),
    );
    try {
      await machines.bootstrapSecret('fb-bootstrap', joiner.script());
      await machines.create('fb', { platform: pool.platform });
      const failed = await machines.phase('fb', 'Failed');
      const expected = new RegExp(
        `^set spec\\.providerID of Machine ${ns()}/fb: .*this namespace names no providers: change the admission policy that refuses it`,
      );
      expect(failed.status?.failureReason).toBe('CreateError');
      expect(failed.status?.failureMessage).toMatch(expected);
      expect(machines.condition(failed, CONDITION.infrastructureReady)).toMatchObject({
        status: 'False',
        reason: 'Forbidden',
        message: expect.stringMatching(expected),
      });
      expect(await machines.eventsInclude('fb', 'Forbidden')).toContain('Forbidden');
      // Nothing ran on the host, and it is given back at once (drained, as after any Machine).
      expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);
      expect(await undrainAfterMachines(1)).toHaveLength(1);
      expect((await pool.allocator()).inUse).toBe(0);
    } finally {
      await lift();
    }
    await machines.delete('fb');
    await machines.gone('fb');
  }, 90_000);

  const secretStatus = (name: string) =>
    core()
      .readNamespacedSecret({ namespace: ns(), name })
      .then(() => 200, statusCode);
  const infraStatus = (name: string) =>
    pool.scope.kube.custom
      .getNamespacedCustomObject({ ...HOSTFLOW_MACHINE_API, namespace: ns(), name })
      .then(() => 200, statusCode);

  it("a hostile tenant cannot have a person's bootstrap Secret deleted, even one two Machines share", async () => {
    // Written by a person, named by two Machines: neither Machine's deletion may take it.
    await machines.bootstrapSecret('shared-bootstrap', joiner.script());
    await machines.create('s1', { platform: pool.platform, secret: 'shared-bootstrap' });
    await machines.create('s2', { platform: pool.platform, secret: 'shared-bootstrap' });
    await Promise.all([machines.phase('s1', 'Running'), machines.phase('s2', 'Running')]);

    await machines.delete('s1');
    await machines.gone('s1');
    expect(await secretStatus('shared-bootstrap')).toBe(200);
    await machines.eventsInclude('s1', 'NotOwned');
    const events = await core().listNamespacedEvent({
      namespace: ns(),
      fieldSelector: 'involvedObject.name=s1,reason=NotOwned',
    });
    expect(events.items[0]?.type).toBe('Warning');
    expect(events.items[0]?.message).toMatch(
      /^Secret \S+\/shared-bootstrap was left alone: spec.bootstrap.dataSecretName names it, but no bootstrap provider made it for this Machine/,
    );
    expect(await infraStatus('s1')).toBe(404); // its own HostflowMachine went
    expect((await machines.get('s2'))?.status?.phase).toBe('Running');

    await machines.delete('s2');
    await machines.gone('s2');
    expect(await secretStatus('shared-bootstrap')).toBe(200);
    await undrainAfterMachines(2);
  }, 150_000);

  it('a failed Machine has its HostflowMachine deleted when it failed before any infrastructure was made', async () => {
    await machines.bootstrapSecret('f1-bootstrap', joiner.script());
    await machines.create('f1', { platform: 'linux/no-such-platform' });
    const failed = await machines.phase('f1', 'Failed');
    expect(failed.spec.providerID).toBeUndefined();
    expect(await infraStatus('f1')).toBe(200);
    // hostflow deletes it before it lets the Machine go, as Cluster API does; Kubernetes' garbage
    // collector (the Machine is its owner) would only do so after the Machine is gone.
    const deletions = await machines.recordDeletions('f1');
    await machines.delete('f1');
    await machines.gone('f1');
    expect(await deletions.upTo(2)).toEqual(['HostflowMachine', 'Machine']);
    expect(await infraStatus('f1')).toBe(404);
    expect(await secretStatus('f1-bootstrap')).toBe(200); // a person's: left
  }, 60_000);

  const readInfra = async (name: string) =>
    (await pool.scope.kube.custom.getNamespacedCustomObject({
      ...HOSTFLOW_MACHINE_API,
      namespace: ns(),
      name,
    })) as {
      metadata: { ownerReferences?: Array<{ kind: string; name: string; uid: string }> };
      status?: unknown;
    };

  it("a hostile tenant cannot take another Machine's HostflowMachine, nor have it deleted", async () => {
    await machines.bootstrapSecret('o1-bootstrap', joiner.script());
    await machines.create('o1', { platform: pool.platform });
    const o1 = await machines.phase('o1', 'Running');
    const before = await readInfra('o1');
    expect(before.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Machine', name: 'o1', uid: o1.metadata.uid }),
    ]);

    // A second Machine naming o1's HostflowMachine: refused before it takes a host.
    await machines.bootstrapSecret('o2-bootstrap', joiner.script());
    await machines.create('o2', { platform: pool.platform, infrastructure: 'o1' });
    const o2 = await machines.until('o2', 'to fail or take a host', (m) =>
      ['Failed', 'Provisioning', 'Provisioned', 'Running'].includes(m.status?.phase ?? ''),
    );
    expect(o2.status?.phase).toBe('Failed');
    expect(o2.status?.failureReason).toBe('InvalidConfiguration');
    expect(o2.status?.failureMessage).toMatch(
      /^HostflowMachine \S+\/o1 is the infrastructure of Machine o1: give this Machine a HostflowMachine of its own/,
    );
    expect((await pool.allocator()).inUse).toBe(1); // o1's host only
    const after = await readInfra('o1');
    expect(after.metadata.ownerReferences).toEqual(before.metadata.ownerReferences);
    expect(after.status).toEqual(before.status);

    // Deleting o2 leaves o1's HostflowMachine, and says so.
    await machines.delete('o2');
    await machines.gone('o2');
    expect(await infraStatus('o1')).toBe(200);
    await machines.eventsInclude('o2', 'NotOwned');
    const events = await core().listNamespacedEvent({
      namespace: ns(),
      fieldSelector: 'involvedObject.name=o2,reason=NotOwned',
    });
    expect(events.items.map((e) => e.message)).toContainEqual(
      expect.stringMatching(
        /^HostflowMachine \S+\/o1 was left alone: it is not this Machine's infrastructure/,
      ),
    );
    expect((await machines.get('o1'))?.status?.phase).toBe('Running');

    await machines.delete('o1');
    await machines.gone('o1');
    expect(await infraStatus('o1')).toBe(404);
    await undrainAfterMachines(1);
  }, 120_000);

  // Last: it deletes the file's namespace, the one the bridge watches.
  it('waits in line while every host is taken, and takes the host a deleted Machine gives back', async () => {
    await machines.bootstrapSecret('q-bootstrap', joiner.script());
    for (const name of ['q1', 'q2']) {
      await machines.create(name, { platform: pool.platform, secret: 'q-bootstrap' });
    }
    const [q1] = await Promise.all([
      machines.phase('q1', 'Running'),
      machines.phase('q2', 'Running'),
    ]);

    // Both hosts serve a Machine: the third asks its allocator and waits in line.
    await machines.create('q3', { platform: pool.platform, secret: 'q-bootstrap' });
    const queue = await waitFor('q3 to wait in line', async () => {
      const { queue } = await pool.allocator();
      return queue.length > 0 ? queue : undefined;
    });
    expect(queue).toEqual([expect.stringMatching(`^${WORKFLOW_ID.machine(ns(), 'q3')}#`)]);
    const waiting = await machines.get('q3');
    expect(waiting?.status?.phase).toBe('Provisioning');
    expect(machines.condition(waiting!, CONDITION.infrastructureReady)).toMatchObject({
      status: 'False',
      reason: 'WaitingForInfrastructure',
    });

    // q1's host comes back (drained after it, as after any Machine, until the operator says).
    await machines.delete('q1');
    await machines.gone('q1');
    await undrainAfterMachines(1);
    const q3 = await machines.phase('q3', 'Running');
    expect(q3.spec.providerID).toBe(q1.spec.providerID);
    expect((await pool.allocator()).queue).toEqual([]);

    for (const name of ['q2', 'q3']) await machines.delete(name);
    await Promise.all([machines.gone('q2'), machines.gone('q3')]);
    await undrainAfterMachines(2);
  }, 240_000);

  it('goes with its namespace: its host given back, its Node deleted, the namespace gone within a minute', async () => {
    await machines.bootstrapSecret('m9-bootstrap', joiner.script());
    await machines.create('m9', { platform: pool.platform });
    const m9 = await machines.phase('m9', 'Running');
    await core().deleteNamespace({ name: ns() });
    await waitFor(
      `namespace ${ns()} to go`,
      async () =>
        (await core()
          .readNamespace({ name: ns() })
          .then(() => 200, statusCode)) === 404
          ? true
          : undefined,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(await readNode(m9.status!.nodeRef!.name)).toBeUndefined();
    expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);
  }, 120_000);
});
