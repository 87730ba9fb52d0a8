// OS image rollouts end to end: real bridge and worker processes, the real API server with MCO's
// CRDs, a real OCI registry (CNCF Distribution) holding the images with their labels, and five
// SSH test hosts registered as the pool's Nodes. rpm-ostree, reboots and the
// kubelet are stand-ins (local-stack/os-stand-in.ts says how); the engine runs the real command
// lines over SSH.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PolicyV1Api } from '@kubernetes/client-node';
import { join } from 'node:path';
import { createHostKeys } from '../activities/ssh/host-keys.js';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import { createOsImageActivities } from '../activities/ssh/os-image.js';
import { waitFor } from '../local-stack/process.js';
import { pushImage, startRegistry, type Registry } from '../local-stack/registry.js';
import { startSshHosts, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { RETRY_ANNOTATION } from '../shared/bpa-api.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { LOCK_API } from '../locks/api.js';
import {
  IMAGE_LABELS,
  MACHINE_CONFIG_API,
  MACHINE_CONFIG_POOL_API,
  NODE_ANNOTATIONS,
  OS_IMAGE_CONFIGMAP,
  POOL_ENGINE_LABEL,
  ROLE_LABEL,
} from '../shared/mco-api.js';
import { startBridge, startWorker, type EngineProcess } from './support/engine.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { describeJson, hostflowOf, stepsOf } from './support/hostflow-cli.js';
import { startNodeStandIns, type NodeStandIns } from '../local-stack/os-stand-in.js';
import { refuse } from './support/refusals.js';
import { createScope, type TestScope } from './support/scope.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const sfx = uniqueSuffix();
const POOL = `workers-${sfx}`;
const ROLE = `worker-${sfx}`;
const KUBELET = 'v1.34.1';
/** Images in the test's registry, by digest: the base (release) image and ones built FROM it. */
let BASE = '';
let CUSTOM = '';
let registry: Registry;
/** Pushes an image built FROM the base, with the test's kubelet unless told otherwise. */
const layered = (tag: string, labels: Record<string, string> = {}) =>
  pushImage(registry.url, 'hostflow/custom', tag, {
    [IMAGE_LABELS.kubeletVersion]: KUBELET,
    [IMAGE_LABELS.baseName]: BASE,
    ...labels,
  });

let scope: TestScope;
let hosts: SshHostPool;
let nodes: NodeStandIns;
let worker: EngineProcess;
let bridge: EngineProcess;

beforeAll(async () => {
  scope = await createScope('rollout');
  registry = await startRegistry({ stateDir: join(testEnv('stateDir'), `registry-${sfx}`) });
  BASE = await pushImage(registry.url, 'hostflow/rhcos', '4.19', {
    [IMAGE_LABELS.kubeletVersion]: KUBELET,
  });
  CUSTOM = await layered('custom');
  const key = generateEd25519KeyPair('core@rollout');
  hosts = await startSshHosts({
    count: 5,
    stateDir: join(testEnv('stateDir'), `ssh-rollout-${sfx}`),
    prefix: `ro${sfx.slice(0, 4)}`,
    adminUser: 'core',
    adminKey: key,
    restart: true, // a reboot kills sshd; it comes back after its boot time
    bootDelayMs: 500,
  });
  nodes = await startNodeStandIns(scope.kube.core, hosts.hosts, {
    image: BASE,
    kubeletVersion: KUBELET,
    labels: { [`node-role.kubernetes.io/${ROLE}`]: '' },
    zones: ['zone-b', 'zone-a'],
  });
  await scope.kube.core.createNamespacedSecret({
    namespace: scope.engineNamespace,
    body: { metadata: { name: 'machine-config-ssh' }, stringData: { id_rsa: key.privateKey } },
  });
  await scope.kube.core.createNamespacedConfigMap({
    namespace: scope.engineNamespace,
    body: { metadata: { name: OS_IMAGE_CONFIGMAP.name }, data: { [OS_IMAGE_CONFIGMAP.key]: BASE } },
  });
  for (const { node } of nodes.nodes)
    await annotateNode(node, {
      [NODE_ANNOTATIONS.currentImage]: BASE,
      [NODE_ANNOTATIONS.state]: 'Done',
    });
  worker = await startWorker(scope, workerEnv());
  bridge = await startBridge(scope);
  await scope.kube.custom.createClusterCustomObject({
    ...MACHINE_CONFIG_POOL_API,
    body: {
      apiVersion: `${MACHINE_CONFIG_POOL_API.group}/v1`,
      kind: 'MachineConfigPool',
      metadata: {
        name: POOL,
        labels: { [POOL_ENGINE_LABEL]: scope.engineNamespace }, // other test files' engines keep off
        annotations: { 'hostflow.dev/boot-timeout': '60s', 'hostflow.dev/drain-timeout': '8s' },
      },
      spec: {
        nodeSelector: { matchLabels: { [`node-role.kubernetes.io/${ROLE}`]: '' } },
        machineConfigSelector: { matchLabels: { [ROLE_LABEL]: ROLE } },
        maxUnavailable: 2,
      },
    },
  });
}, 180_000);

afterAll(async () => {
  await Promise.all([bridge?.stop(), worker?.stop()]);
  for (const name of [`99-${ROLE}-a`, `10-${ROLE}-first`])
    await scope?.kube.custom
      .deleteClusterCustomObject({ ...MACHINE_CONFIG_API, name })
      .catch(() => undefined);
  await scope?.kube.custom
    .deleteClusterCustomObject({ ...MACHINE_CONFIG_POOL_API, name: POOL })
    .catch(() => undefined);
  await nodes?.stop();
  await hosts?.stop();
  await registry?.stop();
  await scope?.dispose();
});

const workerEnv = () => ({ HOSTFLOW_IMAGE_REGISTRIES: registry.url });

async function annotateNode(
  name: string,
  annotations: Record<string, string | null>,
): Promise<void> {
  await scope.kube.core.patchNode({ name, body: { metadata: { annotations } } }, MERGE_PATCH);
}

async function patchPool(body: object): Promise<void> {
  await scope.kube.custom.patchClusterCustomObject(
    { ...MACHINE_CONFIG_POOL_API, name: POOL, body },
    MERGE_PATCH,
  );
}

async function overrideImage(osImageURL: string): Promise<void> {
  await scope.kube.custom.patchClusterCustomObject(
    { ...MACHINE_CONFIG_API, name: `99-${ROLE}-a`, body: { spec: { osImageURL } } },
    MERGE_PATCH,
  );
}

async function machineConfig(name: string, osImageURL: string): Promise<void> {
  await scope.kube.custom.createClusterCustomObject({
    ...MACHINE_CONFIG_API,
    body: {
      apiVersion: `${MACHINE_CONFIG_API.group}/v1`,
      kind: 'MachineConfig',
      metadata: { name, labels: { [ROLE_LABEL]: ROLE } },
      spec: { osImageURL },
    },
  });
}

interface PoolStatus {
  machineCount?: number;
  updatedMachineCount?: number;
  degradedMachineCount?: number;
  configuration?: { name?: string; osImageURL?: string };
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
}
const poolStatus = async () =>
  (
    (await scope.kube.custom.getClusterCustomObject({
      ...MACHINE_CONFIG_POOL_API,
      name: POOL,
    })) as { status?: PoolStatus }
  ).status ?? {};
const condition = (s: PoolStatus, type: string) => s.conditions?.find((c) => c.type === type);
/** Every node runs `image`, and the pool says so. */
const updatedOn = (image: string) => (s: PoolStatus) =>
  s.configuration?.osImageURL === image &&
  s.updatedMachineCount === 5 &&
  condition(s, 'Updated')?.status === 'True';

/** Waits for the pool's status to satisfy `check`, sampling the unavailable count meanwhile. */
async function poolUntil(
  what: string,
  check: (s: PoolStatus) => boolean,
  samples: number[] = [],
): Promise<PoolStatus> {
  let last: PoolStatus = {};
  return waitFor(
    `pool ${POOL} ${what}`,
    async () => {
      samples.push(await nodes.unavailable());
      last = await poolStatus();
      return check(last) ? last : undefined;
    },
    { timeoutMs: 150_000, intervalMs: 250 },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; its status: ${JSON.stringify(last)}`);
  });
}

const allOn = (image: string) => async () => {
  for (const { node } of nodes.nodes) expect(await nodes.bootedImage(node)).toBe(image);
};

describe('a MachineConfigPool of five nodes', () => {
  it('is Updated on its base image before any override', async () => {
    const status = await poolUntil('to count its nodes', updatedOn(BASE));
    expect(status.machineCount).toBe(5);
    expect(status.configuration?.name).toBe('base');
  }, 180_000);

  it('rolls an override out within maxUnavailable 2, never more than 2 unavailable', async () => {
    const samples: number[] = [];
    await machineConfig(`99-${ROLE}-a`, CUSTOM);
    // Last by name wins, as in MCO: this one sorts first, so it changes nothing.
    await machineConfig(`10-${ROLE}-first`, await layered('other'));
    const done = await poolUntil('to be Updated on the custom image', updatedOn(CUSTOM), samples);
    expect(done.configuration?.name).toBe(`MachineConfig 99-${ROLE}-a`);
    expect(done.degradedMachineCount).toBe(0);
    expect(Math.max(...samples)).toBeLessThanOrEqual(2);
    expect(Math.max(...samples)).toBeGreaterThan(0);
    await allOn(CUSTOM)();
  }, 180_000);

  it('hostflow describe pool: its target image, its nodes and their updates', async () => {
    // Visibility lags a little behind the node updates' ends.
    const d = await waitFor('describe to list five finished node updates', async () => {
      const found = await describeJson(scope, 'pool', POOL);
      const nodes = found.facts.nodes as string[];
      return nodes.length === 5 && nodes.every((n) => / COMPLETED /.test(n)) ? found : undefined;
    });
    expect(d).toMatchObject({
      kind: 'MachineConfigPool',
      object: POOL,
      workflowId: WORKFLOW_ID.rollout(POOL),
      status: 'RUNNING',
      phase: 'Updated',
      phaseFrom: 'object',
      facts: { targetImage: CUSTOM, machines: '5/5 updated, 0 degraded' },
      notes: [],
    });
    expect(d.facts.nodes).toEqual(
      [...nodes.nodes]
        .map(({ node }) => node)
        .sort()
        .map((node) =>
          expect.stringMatching(new RegExp(`^${node}: COMPLETED \\(rollout/${POOL}/${node}/`)),
        ),
    );
    expect(stepsOf(d)).toEqual(
      expect.arrayContaining([
        'signal poolObserved',
        'local activity listPoolNodes completed',
        'child workflow nodeUpdateWorkflow completed',
      ]),
    );
    const { stdout } = await hostflowOf(scope, 'describe', 'mcp', POOL);
    expect(stdout).toMatch(new RegExp(`^MachineConfigPool: +${POOL}$`, 'm'));
    expect(stdout).toMatch(/^Phase: +Updated$/m);
    expect(stdout).toMatch(
      new RegExp(`^Target image: +${CUSTOM.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm'),
    );
    expect(stdout).toMatch(/child rollout\/.* — done/);
  });

  it('stops at a node whose rebase fails, and goes on from there once retried', async () => {
    const NEXT = await layered('next');
    const broken = nodes.nodes[0]!.node;
    await nodes.failRebase(broken, true);
    await overrideImage(NEXT);
    const degraded = await poolUntil(
      'to be Degraded',
      (s) => condition(s, 'Degraded')?.status === 'True',
    );
    expect(condition(degraded, 'Degraded')?.message).toMatch(
      new RegExp(`${broken}: rebase: .*failed to pull`),
    );
    const node = await scope.kube.core.readNode({ name: broken });
    expect(node.metadata?.annotations?.[NODE_ANNOTATIONS.state]).toBe('Degraded');
    await nodes.failRebase(broken, false);
    await annotateNode(broken, { [RETRY_ANNOTATION]: new Date().toISOString() });
    await poolUntil(
      'to be Updated again',
      (s) => updatedOn(NEXT)(s) && condition(s, 'Degraded')?.status === 'False',
    );
    await allOn(NEXT)();
  }, 240_000);

  it('degrades a node whose drain a PodDisruptionBudget holds past the timeout (FailedToDrain)', async () => {
    const IMAGE = await layered('drain');
    const held = nodes.nodes[1]!.node;
    // A pod on it that its budget never lets go. No scheduler, no kubelet: the test plays the
    // kubelet's part, binding the pod to the node and reporting it Running and Ready; the stack's
    // disruption controller computes the budget's status from it, as in a cluster.
    const core = scope.kube.core;
    const pod = await core.createNamespacedPod({
      namespace: scope.namespace,
      body: {
        metadata: { name: 'db-0', labels: { app: 'db' } },
        spec: { nodeName: held, containers: [{ name: 'db', image: 'registry.invalid/db:1' }] },
      },
    });
    await core.replaceNamespacedPodStatus({
      namespace: scope.namespace,
      name: 'db-0',
      body: {
        ...pod,
        status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
      },
    });
    const policy = scope.kube.kc.makeApiClient(PolicyV1Api);
    await policy.createNamespacedPodDisruptionBudget({
      namespace: scope.namespace,
      body: {
        metadata: { name: 'db' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
      },
    });
    const budget = await waitFor('the disruption controller to count db-0', async () => {
      const { metadata, status } = await policy.readNamespacedPodDisruptionBudget({
        namespace: scope.namespace,
        name: 'db',
      });
      const current = status?.observedGeneration === metadata?.generation;
      return current && status?.currentHealthy === 1 ? status : undefined;
    });
    expect(budget.disruptionsAllowed).toBe(0);
    await overrideImage(IMAGE);
    const degraded = await poolUntil(
      'to be Degraded by the drain',
      (s) => condition(s, 'Degraded')?.reason === 'NodeDegraded',
    );
    expect(condition(degraded, 'Degraded')?.message).toMatch(
      new RegExp(`${held}: drain: 1 pod\\(s\\) left after 8s: .*db-0: .*disruption budget`),
    );
    const events = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${held},involvedObject.kind=Node`,
    });
    expect(events.items.map((e) => e.reason)).toContain('FailedToDrain');
    // The budget lets it go now; the kubelet's part: the evicted pod goes away.
    await core.deleteNamespacedPod({
      namespace: scope.namespace,
      name: 'db-0',
      gracePeriodSeconds: 0,
    });
    await policy.deleteNamespacedPodDisruptionBudget({ namespace: scope.namespace, name: 'db' });
    await annotateNode(held, { [RETRY_ANNOTATION]: new Date().toISOString() });
    await poolUntil(
      'to be Updated after the retry',
      (s) => updatedOn(IMAGE)(s) && condition(s, 'Degraded')?.status === 'False',
    );
  }, 180_000);

  it('starts no node while paused, then goes on within maxUnavailable as a percent', async () => {
    const PAUSED = await layered('paused');
    await patchPool({ spec: { paused: true, maxUnavailable: '40%' } }); // 40% of 5: 2
    await overrideImage(PAUSED);
    await poolUntil(
      'to say it is paused',
      (s) =>
        s.configuration?.osImageURL === PAUSED && condition(s, 'Updating')?.reason === 'Paused',
    );
    await new Promise((r) => setTimeout(r, 3_000));
    for (const { node } of nodes.nodes) {
      const annotations = (await scope.kube.core.readNode({ name: node })).metadata?.annotations;
      expect(annotations?.[NODE_ANNOTATIONS.desiredImage]).not.toBe(PAUSED);
    }
    const samples: number[] = [];
    await patchPool({ spec: { paused: false } });
    await poolUntil('to be Updated once resumed', updatedOn(PAUSED), samples);
    expect(Math.max(...samples)).toBeLessThanOrEqual(2);
    await allOn(PAUSED)();
  }, 180_000);

  it('survives its worker killed mid-node, and updates no node twice', async () => {
    const KILLED = await layered('killed');
    const since = new Date();
    await overrideImage(KILLED);
    await waitFor(
      'a node to be Working',
      async () => {
        for (const { node } of nodes.nodes) {
          const a = (await scope.kube.core.readNode({ name: node })).metadata?.annotations;
          if (
            a?.[NODE_ANNOTATIONS.state] === 'Working' &&
            a[NODE_ANNOTATIONS.desiredImage] === KILLED
          )
            return true;
        }
        return undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    // The nodes being updated are locked meanwhile (Locks on Nodes: namespace cluster-locks).
    const working = (await scope.kube.core.listNode()).items.find(
      (n) => n.metadata?.annotations?.[NODE_ANNOTATIONS.state] === 'Working',
    )!.metadata!.name!;
    await scope.kube.custom.getNamespacedCustomObject({
      ...LOCK_API,
      namespace: 'cluster-locks',
      name: working,
    });
    await worker.kill();
    worker = await startWorker(scope, workerEnv());
    await poolUntil('to be Updated after the restart', updatedOn(KILLED));
    await allOn(KILLED)();
    const runs: string[] = [];
    const query = `HostflowKind = 'rollout-node' AND K8sName = '${POOL}' AND StartTime > '${since.toISOString()}'`;
    for await (const w of scope.temporal.client.workflow.list({ query })) runs.push(w.workflowId);
    expect(runs).toHaveLength(5); // one update per node, none repeated
    expect(new Set(runs.map((id) => id.split('/')[2])).size).toBe(5);
  }, 180_000);

  it('reboots a node only into a staged deployment: a reboot retried after the boot leaves it up', async () => {
    // What the worker's reboot step does, called as a retry would call it after its worker was
    // lost once the node had rebooted: nothing is staged any more, so the node must stay up.
    const { host, node } = nodes.nodes[1]!;
    const os = createOsImageActivities({
      core: scope.kube.core,
      engineNamespace: scope.engineNamespace,
      hostKeys: createHostKeys({ core: scope.kube.core, engineNamespace: scope.engineNamespace }),
    });
    const target = {
      name: node,
      address: host.address,
      user: host.adminUser,
      keySecret: 'machine-config-ssh',
    };
    const booted = await nodes.bootedImage(node);
    const readyOf = async () =>
      (await scope.kube.core.readNode({ name: node })).status?.conditions?.find(
        (c) => c.type === 'Ready',
      )?.status;
    await os.rebootNode({ host: target });
    for (let i = 0; i < 8; i++) {
      // the stand-in looks for a reboot request every 300 ms
      await new Promise((r) => setTimeout(r, 250));
      expect(await readyOf()).toBe('True');
      expect(await nodes.bootedImage(node)).toBe(booted);
    }
    // With an image staged, the same call reboots the node into it.
    await os.rebaseOsImage({ host: target, image: booted });
    await os.rebootNode({ host: target });
    await waitFor(`${node} to reboot`, async () => (await readyOf()) === 'False' || undefined, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await waitFor(`${node} to be back`, async () => (await readyOf()) === 'True' || undefined, {
      timeoutMs: 90_000,
    });
    expect(await nodes.bootedImage(node)).toBe(booted);
  }, 180_000);

  it('refuses in preflight what no node could run, touching nothing; warns of a tag', async () => {
    const before = await poolStatus();
    const refusedFor = async (image: string, why: RegExp) => {
      await overrideImage(image);
      const refused = await poolUntil(
        `to refuse ${image}`,
        (s) =>
          s.configuration?.osImageURL === image &&
          condition(s, 'Degraded')?.reason === 'RolloutBlocked',
      );
      expect(condition(refused, 'Degraded')?.message).toMatch(why);
      for (const { node } of nodes.nodes) {
        const annotations = (await scope.kube.core.readNode({ name: node })).metadata?.annotations;
        expect(annotations?.[NODE_ANNOTATIONS.state]).toBe('Done');
        expect(annotations?.[NODE_ANNOTATIONS.desiredImage]).toBe(before.configuration?.osImageURL);
      }
    };
    await refusedFor(
      'quay.io/Hostflow/custom:latest',
      /^preflight: "quay.io\/Hostflow\/custom:latest" is not an image reference/,
    );
    const missing = `${registry.host}/hostflow/missing@sha256:${'0'.repeat(64)}`;
    await refusedFor(missing, /^preflight: .* is not on 127\.0\.0\.1:\d+ \(404\)$/);
    const newKubelet = await layered('kubelet', { [IMAGE_LABELS.kubeletVersion]: 'v1.35.0' });
    await refusedFor(newKubelet, /carries kubelet v1\.35\.0, but .*\(v1\.34\.1\).* run another$/);
    const otherBase = await layered('rebased', { [IMAGE_LABELS.baseName]: 'quay.io/other/os:1' });
    await refusedFor(otherBase, /was built FROM quay\.io\/other\/os:1, but .* on /);

    const TAGGED = `${registry.host}/hostflow/custom:v6`;
    await layered('v6');
    await overrideImage(TAGGED);
    await poolUntil('to roll a tag out', updatedOn(TAGGED));
    const events = await scope.kube.core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${POOL},involvedObject.kind=MachineConfigPool`,
    });
    expect(events.items.map((e) => e.reason)).toEqual(
      expect.arrayContaining(['PreflightFailed', 'ImageNotPinned', 'PreflightPassed']),
    );
  }, 240_000);

  it('keeps releasing a node Lock until the API server lets it go, saying so', async () => {
    const HELD = await layered('lock-held');
    const node = nodes.nodes[3]!.node;
    const probe = `probe-${sfx}`;
    // An admission policy refuses every change to the node's Lock, as a broken webhook or a lost
    // permission would: taking it (a CREATE) goes through, letting go of it does not.
    const lift = await refuse(
      scope.kube.kc,
      {
        apiGroup: LOCK_API.group,
        resource: LOCK_API.plural,
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        namespace: 'cluster-locks',
        picks: `request.name == '${probe}' || (request.operation != 'CREATE' && request.name == '${node}')`,
        reason: 'Forbidden',
        message: 'the test keeps this Lock',
      },
      () =>
        scope.kube.custom.createNamespacedCustomObject({
          ...LOCK_API,
          namespace: 'cluster-locks',
          body: {
            apiVersion: `${LOCK_API.group}/${LOCK_API.version}`,
            kind: 'Lock',
            metadata: { name: probe },
            spec: { reason: 'probe' },
          },
          dryRun: 'All',
        }),
    );
    let details: string | undefined;
    try {
      await overrideImage(HELD);
      details = await waitFor(
        `the update of ${node} to say it cannot release its Lock yet`,
        async () => {
          const query = `HostflowKind = 'rollout-node' AND K8sName = '${POOL}' AND ExecutionStatus = 'Running'`;
          for await (const w of scope.temporal.client.workflow.list({ query })) {
            if (!w.workflowId.includes(`/${node}/`)) continue;
            const handle = scope.temporal.client.workflow.getHandle(w.workflowId);
            const meta = (await handle.query('__temporal_workflow_metadata')) as {
              currentDetails?: string;
            };
            if (/^Cannot release its Node Lock yet \(try [2-9]/.test(meta.currentDetails ?? ''))
              return meta.currentDetails;
          }
          return undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      // The node is updated; only its Lock is held on to, and it still refuses others.
      const annotations = (await scope.kube.core.readNode({ name: node })).metadata?.annotations;
      expect(annotations?.[NODE_ANNOTATIONS.state]).toBe('Done');
      await scope.kube.custom.getNamespacedCustomObject({
        ...LOCK_API,
        namespace: 'cluster-locks',
        name: node,
      });
    } finally {
      await lift();
    }
    expect(details).toMatch(/the test keeps this Lock.*refuses updates and deletion/);
    await poolUntil('to be Updated once the Lock goes', updatedOn(HELD));
    await waitFor(`the Lock on ${node} to be released`, async () =>
      scope.kube.custom
        .getNamespacedCustomObject({ ...LOCK_API, namespace: 'cluster-locks', name: node })
        .then(
          () => undefined,
          (err: unknown) => ((err as { code?: number }).code === 404 ? true : undefined),
        ),
    );
  }, 240_000);

  it('rolls back to the base image when the overrides are deleted', async () => {
    // The one that does not win goes first, so the pool never targets it on the way.
    for (const name of [`10-${ROLE}-first`, `99-${ROLE}-a`])
      await scope.kube.custom.deleteClusterCustomObject({ ...MACHINE_CONFIG_API, name });
    await poolUntil('to be back on the base image', updatedOn(BASE));
    await allOn(BASE)();
  }, 180_000);
});
