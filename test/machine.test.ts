// HostflowMachines on static hosts under the real Cluster API core, end to end: real bridge and
// worker processes, real SSH hosts, the real API server and Cluster API core's manager, which
// runs each Machine's life (phases, providerID, nodeRef, drain, Node deletion) while hostflow
// gives it its host. The bootstrap data is a shell script that registers a Node through the API
// server and writes Cluster API's sentinel (test/support/node-join.ts): it stands in for kubeadm
// join and a kubelet, which cannot run on these hosts. With no kubelet on those Nodes, the test
// plays the kubelet's part for their pods: it binds each to its node, reports it Running and
// Ready, and deletes the pods a drain evicted (they would stay Terminating). The stack's
// kube-controller-manager runs the disruption controller, so the Eviction API holds to each
// PodDisruptionBudget as in any cluster.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PolicyV1Api, type V1Pod } from '@kubernetes/client-node';
import { installCrdObject } from '../local-stack/cluster-setup.js';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { setHostDrained } from '../shared/contracts/allocator.js';
import { statusCode } from '../shared/kube-errors.js';
import {
  BOOTSTRAP_SENTINEL,
  CONDITION,
  HOSTFLOW_MACHINE_API,
  HOSTFLOW_MACHINE_FINALIZER,
  MACHINE_API,
} from '../shared/machine-api.js';
import { describeJson, hostflowOf, stepsOf } from './support/hostflow-cli.js';
import { CLUSTER, Machines } from './support/machines.js';
import { createNodeJoiner, type NodeJoiner } from './support/node-join.js';
import { OTHER_PROVIDER_GROUP, otherProviderCrd } from './support/other-provider.js';
import { refuse } from './support/refusals.js';
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
  await machines.ensureCluster();
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

/** A pod running on the node, reported Running and Ready as a kubelet would. */
async function podOn(
  node: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  const body: V1Pod = {
    metadata: { name, labels },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.invalid/app:1' }] },
  };
  await core().createNamespacedPod({ namespace: ns(), body });
  const now = new Date();
  // A merge patch, not a replace: the pod may have moved on since it was made.
  await core().patchNamespacedPodStatus(
    {
      namespace: ns(),
      name,
      body: {
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
          startTime: now,
        },
      },
    },
    MERGE_PATCH,
  );
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

/** The budget's status once the disruption controller counts `healthy` pods for it. */
async function pdb(name: string, app: string, minAvailable: number, healthy: number) {
  await policy().createNamespacedPodDisruptionBudget({
    namespace: ns(),
    body: { metadata: { name }, spec: { minAvailable, selector: { matchLabels: { app } } } },
  });
  return waitFor(`PodDisruptionBudget ${name} to count ${healthy} healthy pods`, async () => {
    const { metadata, status } = await policy().readNamespacedPodDisruptionBudget({
      namespace: ns(),
      name,
    });
    const current = status?.observedGeneration === metadata?.generation;
    return current && status?.currentHealthy === healthy ? status : undefined;
  });
}

describe('a HostflowMachine on a static host, under Cluster API core', () => {
  let nodeName = '';
  let providerID = '';

  it('takes nothing until its bootstrap data exists; then Cluster API core sees it Provisioned and Running', async () => {
    const phases = await machines.recordPhases('m1');
    await machines.create('m1', { platform: pool.platform });
    const waiting = await machines.readyReason('m1', 'WaitingForBootstrapData');
    expect(machines.condition(waiting, CONDITION.ready)?.message).toBe(
      'waiting for Secret m1-bootstrap',
    );
    expect(waiting.metadata.finalizers).toEqual([HOSTFLOW_MACHINE_FINALIZER]);
    // Cluster API core made it the Machine's, and labelled it with the Cluster.
    expect(waiting.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Machine', name: 'm1', controller: true }),
    ]);
    expect(waiting.spec.providerID).toBeUndefined();
    expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);

    await machines.bootstrapSecret('m1-bootstrap', joiner.script());
    const running = await machines.phase('m1', 'Running', 120_000);
    // Cluster API core writes its phase once per pass: a Node that joins at once skips some.
    expect((await phases.upTo('Running')).at(-1)).toBe('Running');
    providerID = running.spec.providerID!;
    expect(providerID).toMatch(/^hostflow:\/\/static\/h[12]$/);
    nodeName = running.status!.nodeRef!.name!;
    expect(nodeName).toBe('m1');
    expect((await readNode(nodeName))?.spec?.providerID).toBe(providerID);
    expect(running.status?.addresses).toContainEqual({
      type: 'InternalIP',
      address: hostOf(providerID).address,
    });
    // Its InfrastructureReady mirrors the HostflowMachine's Ready.
    expect(machines.condition(running, 'InfrastructureReady')).toMatchObject({ status: 'True' });
    const infra = (await machines.infrastructure('m1'))!;
    expect(infra.spec.providerID).toBe(providerID);
    expect(infra.status).toMatchObject({
      initialization: { provisioned: true },
      addresses: expect.arrayContaining([
        { type: 'InternalIP', address: hostOf(providerID).address },
      ]),
    });
    expect(machines.condition(infra, CONDITION.ready)).toMatchObject({
      status: 'True',
      reason: 'Ready',
    });
    expect(machines.condition(infra, CONDITION.paused)).toMatchObject({
      status: 'False',
      reason: 'NotPaused',
    });
    expect(await hostOf(providerID).exec(['test', '-f', BOOTSTRAP_SENTINEL])).toMatchObject({
      code: 0,
    });
    await machines.eventsInclude('m1', 'InstanceCreated', 'Bootstrapped');

    // Findable in the UI by one query on its search attributes.
    const query =
      `HostflowKind = 'machine' AND K8sNamespace = '${ns()}' AND K8sName = 'm1' AND ` +
      `ClusterName = '${CLUSTER}' AND ProviderID = '${providerID}' AND Phase = 'Provisioned'`;
    const found = await waitFor('the HostflowMachine by its search attributes', async () => {
      const ids: string[] = [];
      for await (const w of pool.scope.temporal.client.workflow.list({ query }))
        ids.push(w.workflowId);
      return ids.length ? ids : undefined;
    });
    expect(found).toEqual([WORKFLOW_ID.hostflowMachine(ns(), 'm1')]);
  }, 180_000);

  it('hostflow describe hfm: its Machine, host, providerID, phases and steps', async () => {
    const d = await describeJson(pool.scope, 'hfm', `${ns()}/m1`);
    expect(d).toMatchObject({
      kind: 'HostflowMachine',
      object: `${ns()}/m1`,
      workflowId: WORKFLOW_ID.hostflowMachine(ns(), 'm1'),
      status: 'RUNNING',
      phase: 'Provisioned',
      facts: {
        cluster: CLUSTER,
        machine: 'm1',
        host: /h\d$/.exec(providerID)![0],
        providerID,
        failure: null,
      },
      error: null,
      notes: [],
    });
    expect(stepsOf(d)).toEqual(
      expect.arrayContaining([
        'signal hostflowMachineObserved',
        'local activity setHostflowMachineProviderId completed',
        'phase Pending',
        'phase Provisioned',
      ]),
    );
    const { stdout } = await hostflowOf(pool.scope, 'describe', 'machine', `${ns()}/m1`);
    expect(stdout).toMatch(
      new RegExp(`^ProviderID: +${providerID.replace(/[/.]/g, '\\$&')}$`, 'm'),
    );
  });

  it('is drained by Cluster API core through a PodDisruptionBudget, then its host given back and its Node deleted', async () => {
    await podOn(nodeName, 'web-1', { app: 'web' });
    await podOn(nodeName, 'web-2', { app: 'web' });
    expect((await pdb('web', 'web', 1, 2)).disruptionsAllowed).toBe(1);
    await machines.delete('m1');
    // The budget lets exactly one of the two go; the other waits for a replacement.
    await waitFor('one pod evicted, the other held by its budget', async () => {
      const pods = (await core().listNamespacedPod({ namespace: ns() })).items;
      return pods.filter((p) => p.metadata?.deletionTimestamp).length === 1 ? true : undefined;
    });
    expect((await readNode(nodeName))?.spec?.unschedulable).toBe(true);
    await actAsKubelet();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // Held: the host is still its, its Node still there.
    expect((await machines.get('m1'))?.status?.phase).toBe('Deleting');
    expect(await hostOf(providerID).exec(['test', '-f', BOOTSTRAP_SENTINEL])).toMatchObject({
      code: 0,
    });

    // A replacement runs elsewhere: two healthy again, so the budget lets the second one go.
    await podOn('elsewhere', 'web-3', { app: 'web' });
    await waitFor(
      'the drain to evict web-2',
      async () => {
        await actAsKubelet();
        const left = (
          await core().listNamespacedPod({
            namespace: ns(),
            fieldSelector: `spec.nodeName=${nodeName}`,
          })
        ).items;
        return left.length === 0 ? true : undefined;
      },
      { timeoutMs: 90_000 },
    );
    await machines.gone('m1');
    expect(await readNode(nodeName)).toBeUndefined();
    expect(await hostOf(providerID).exec(['test', '-f', BOOTSTRAP_SENTINEL])).toMatchObject({
      code: 1,
    });
    // A hostile tenant's bootstrap ran as root there: the host takes no new work by itself.
    expect(await undrainAfterMachines(1)).toEqual([
      expect.stringMatching(/ran its bootstrap data there as root; reinstall or wipe the host/),
    ]);
    await core().deleteNamespacedPod({ namespace: ns(), name: 'web-3', gracePeriodSeconds: 0 });
  }, 180_000);

  it('waits while its Cluster is paused or it carries the paused annotation, deletion included', async () => {
    await machines.create('p1', { platform: pool.platform });
    // Paused once it is its Machine's (Cluster API core does nothing for a paused Cluster).
    await machines.readyReason('p1', 'WaitingForBootstrapData');
    await machines.pauseCluster(true);
    try {
      await machines.bootstrapSecret('p1-bootstrap', joiner.script());
      const paused = await machines.untilInfrastructure(
        'p1',
        'to say it is paused',
        (infra) => machines.condition(infra, CONDITION.paused)?.status === 'True',
      );
      expect(machines.condition(paused, CONDITION.paused)?.message).toBe(
        `its Cluster ${CLUSTER} is paused`,
      );
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect((await machines.infrastructure('p1'))?.spec.providerID).toBeUndefined();
    } finally {
      await machines.pauseCluster(false);
    }
    const running = await machines.phase('p1', 'Running', 120_000);
    await machines.annotateInfrastructure('p1', { 'cluster.x-k8s.io/paused': '' });
    await machines.untilInfrastructure(
      'p1',
      'to say it is paused by its annotation',
      (infra) => machines.condition(infra, CONDITION.paused)?.status === 'True',
    );
    await machines.delete('p1');
    await waitFor('Cluster API core to delete HostflowMachine p1', async () =>
      (await machines.infrastructure('p1'))?.metadata.finalizers ? true : undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // Paused: its host is not given back, so the HostflowMachine and the Machine stay.
    expect((await machines.infrastructure('p1'))?.metadata.finalizers).toEqual([
      HOSTFLOW_MACHINE_FINALIZER,
    ]);
    expect(
      await hostOf(running.spec.providerID).exec(['test', '-f', BOOTSTRAP_SENTINEL]),
    ).toMatchObject({
      code: 0,
    });
    await machines.annotateInfrastructure('p1', { 'cluster.x-k8s.io/paused': null });
    await machines.gone('p1');
    await undrainAfterMachines(1);
  }, 240_000);

  it('a hostile tenant: never lands on a build host, and says why', async () => {
    await machines.bootstrapSecret('mb-bootstrap', joiner.script());
    await machines.create('mb', { platform: BUILDS_PLATFORM() });
    const failed = await machines.readyReason('mb', 'InfrastructureFailed', 40_000);
    expect(machines.condition(failed, CONDITION.ready)?.message).toMatch(
      /no host of this platform serves Cluster API Machines: a Machine runs only on a host with host\.<name>\.serves: machines/,
    );
    expect(failed.status?.initialization?.provisioned).toBeUndefined();
    // Cluster API core shows it on the Machine.
    await machines.until(
      'mb',
      'to mirror why',
      (m) => machines.condition(m, 'InfrastructureReady')?.reason === 'InfrastructureFailed',
    );
    expect((await pool.allocator(BUILDS_PLATFORM())).inUse).toBe(0);
    expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);
    await machines.delete('mb');
    await machines.gone('mb');
  }, 60_000);

  it('a hostile tenant cannot have a HostflowMachine serve a Machine that does not name it', async () => {
    await machines.bootstrapSecret('victim-bootstrap', joiner.script());
    await machines.create('victim', { platform: pool.platform, secret: 'victim-bootstrap' });
    const victim = await machines.phase('victim', 'Running', 120_000);
    // A HostflowMachine claiming to be the victim's: its ownerReference alone proves nothing.
    await pool.scope.kube.custom.createNamespacedCustomObject({
      ...HOSTFLOW_MACHINE_API,
      namespace: ns(),
      body: {
        apiVersion: `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`,
        kind: 'HostflowMachine',
        metadata: {
          name: 'forged',
          ownerReferences: [
            {
              apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
              kind: 'Machine',
              name: 'victim',
              uid: victim.metadata.uid,
              controller: true,
            },
          ],
        },
        spec: { platform: pool.platform },
      },
    });
    const forged = await machines.readyReason('forged', 'WaitingForOwner');
    expect(machines.condition(forged, CONDITION.ready)?.message).toBe(
      'Machine victim is named as its owner, but its spec.infrastructureRef names HostflowMachine victim: a HostflowMachine serves only the Machine whose infrastructure it is',
    );
    expect((await pool.allocator()).inUse).toBe(1);
    await pool.scope.kube.custom.deleteNamespacedCustomObject({
      ...HOSTFLOW_MACHINE_API,
      namespace: ns(),
      name: 'forged',
    });
    await machines.delete('victim');
    await machines.gone('victim');
    await machines.gone('forged');
    await undrainAfterMachines(1);
  }, 180_000);

  it('fails at once, saying why, when an admission policy refuses its providerID, and gives its host back', async () => {
    const lift = await refuse(
      pool.scope.kube.kc,
      {
        apiGroup: HOSTFLOW_MACHINE_API.group,
        resource: HOSTFLOW_MACHINE_API.plural,
        operations: ['CREATE', 'UPDATE'],
        namespace: ns(),
        picks: 'has(object.spec.providerID)',
        reason: 'Forbidden',
        message: 'this namespace names no providers',
      },
      () =>
        pool.scope.kube.custom.createNamespacedCustomObject({
          ...HOSTFLOW_MACHINE_API,
          namespace: ns(),
          body: {
            apiVersion: `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`,
            kind: 'HostflowMachine',
            metadata: { name: 'probe' },
            spec: { platform: pool.platform, providerID: 'probe://x' },
          },
          dryRun: 'All',
        }),
    );
    try {
      await machines.bootstrapSecret('fb-bootstrap', joiner.script());
      await machines.create('fb', { platform: pool.platform });
      const failed = await machines.readyReason('fb', 'Forbidden');
      expect(machines.condition(failed, CONDITION.ready)?.message).toMatch(
        new RegExp(
          `^set spec\\.providerID of HostflowMachine ${ns()}/fb: .*this namespace names no providers: change the admission policy that refuses it`,
        ),
      );
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
  }, 120_000);

  it('leaves a Machine of another provider to that provider: no workflow, finalizer or Event of its own', async () => {
    const INFRA = OTHER_PROVIDER_GROUP;
    await installCrdObject(pool.scope.kube.kc, otherProviderCrd('OtherMachine'));
    await pool.scope.kube.custom.createNamespacedCustomObject({
      group: INFRA,
      version: 'v1beta2',
      plural: 'othermachines',
      namespace: ns(),
      body: { apiVersion: `${INFRA}/v1beta2`, kind: 'OtherMachine', metadata: { name: 'theirs' } },
    });
    await machines.bootstrapSecret('theirs-bootstrap', joiner.script());
    await machines.create('theirs', {
      platform: pool.platform,
      infrastructure: 'theirs',
      spec: { infrastructureRef: { apiGroup: INFRA, kind: 'OtherMachine', name: 'theirs' } },
    });
    // Cluster API core takes its InfraMachine as the Machine's: the bridge has seen it by then.
    await waitFor('Cluster API core to own OtherMachine theirs', async () => {
      const other = (await pool.scope.kube.custom.getNamespacedCustomObject({
        group: INFRA,
        version: 'v1beta2',
        plural: 'othermachines',
        namespace: ns(),
        name: 'theirs',
      })) as { metadata: { ownerReferences?: unknown[] } };
      return other.metadata.ownerReferences?.length ? true : undefined;
    });
    const theirs = (await machines.get('theirs'))!;
    expect(theirs.metadata.finalizers).toEqual(['machine.cluster.x-k8s.io']); // Cluster API's own
    expect(await machines.eventReasons('theirs', 'Machine')).not.toContain('InstanceCreated');
    const handle = pool.scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.hostflowMachine(ns(), 'theirs'),
    );
    await expect(handle.describe()).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
    expect((await pool.allocator()).inUse).toBe(0);
    await machines.delete('theirs');
    await machines.gone('theirs');
  }, 60_000);

  it('waits in line while every host is taken, and takes the host a deleted Machine gives back', async () => {
    await machines.bootstrapSecret('q-bootstrap', joiner.script());
    for (const name of ['q1', 'q2']) {
      await machines.create(name, { platform: pool.platform, secret: 'q-bootstrap' });
    }
    const [q1] = await Promise.all([
      machines.phase('q1', 'Running', 120_000),
      machines.phase('q2', 'Running', 120_000),
    ]);

    // Both hosts serve a Machine: the third asks its allocator and waits in line.
    await machines.create('q3', { platform: pool.platform, secret: 'q-bootstrap' });
    const queue = await waitFor('q3 to wait in line', async () => {
      const { queue } = await pool.allocator();
      return queue.length > 0 ? queue : undefined;
    });
    expect(queue).toEqual([expect.stringMatching(`^${WORKFLOW_ID.hostflowMachine(ns(), 'q3')}#`)]);
    await machines.readyReason('q3', 'WaitingForHost');

    // q1's host comes back (drained after it, as after any Machine, until the operator says).
    await machines.delete('q1');
    await machines.gone('q1');
    await undrainAfterMachines(1);
    const q3 = await machines.phase('q3', 'Running', 120_000);
    expect(q3.spec.providerID).toBe(q1.spec.providerID);
    expect((await pool.allocator()).queue).toEqual([]);

    for (const name of ['q2', 'q3']) await machines.delete(name);
    await Promise.all([machines.gone('q2'), machines.gone('q3')]);
    await undrainAfterMachines(2);
  }, 300_000);

  it('goes with its namespace: its host given back, the namespace gone within two minutes', async () => {
    await machines.bootstrapSecret('m9-bootstrap', joiner.script());
    await machines.create('m9', { platform: pool.platform });
    await machines.phase('m9', 'Running', 120_000);
    // Its Cluster goes too: Cluster API core then leaves the Node to the cluster being deleted.
    await core().deleteNamespace({ name: ns() });
    await waitFor(
      `namespace ${ns()} to go`,
      async () =>
        (await core()
          .readNamespace({ name: ns() })
          .then(() => 200, statusCode)) === 404
          ? true
          : undefined,
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    expect([await sentinelOn(0), await sentinelOn(1)]).toEqual([false, false]);
  }, 180_000);
});
