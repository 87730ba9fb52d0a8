// HostflowMachines on dynamic platforms under the real Cluster API core, end to end: moto's EC2
// and the IBM VPC double, whose instances boot into real sshd hosts, with real bridge and worker
// processes. Cluster API core runs the Machines, MachineSets, MachineDeployments and
// MachineHealthChecks; hostflow gives each Machine its VM. The bootstrap data registers the Node
// (test/support/node-join.ts stands in for kubeadm join and a kubelet).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { CONDITION, MACHINE_API } from '../shared/machine-api.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import { startWorker, tearDown, type EngineProcess } from './support/engine.js';
import { uniqueSuffix } from './support/env.js';
import {
  machinePlatformKeys,
  startMachineEngine,
  storeCloudSecrets,
  type Machines,
} from './support/machines.js';
import type { NodeJoiner } from './support/node-join.js';
import { createScope, type TestScope } from './support/scope.js';
import { startVmCloud, type VmCloud } from './support/vm-cloud.js';

const sfx = uniqueSuffix();
const AWS = `linux/mawsd-${sfx}`;
const AWS_SLOW = `linux/mawss-${sfx}`;
/** For MachineDeployments: room for five VMs. */
const AWS_FLEET = `linux/mawsf-${sfx}`;
const IBMZ = `linux/mibmz-${sfx}`;
const tags = {
  aws: `hfmaws-${sfx}`,
  slow: `hfmawss-${sfx}`,
  fleet: `hfmawsf-${sfx}`,
  ibmz: `hfmibmz-${sfx}`,
};
let scope: TestScope;
let aws: VmCloud;
let ibmz: VmCloud;
let worker: EngineProcess;
let bridge: EngineProcess;
let machines: Machines;
let joiner: NodeJoiner;

const workerEnv = () => ({ ...aws.workerEnv, ...ibmz.workerEnv });

beforeAll(async () => {
  scope = await createScope('mcloud');
  [aws, ibmz] = await Promise.all([
    startVmCloud('aws', { name: `maws-${sfx}`, subnetCidr: '10.231.208.0/20', bootDelayMs: 1000 }),
    startVmCloud('ibmz', {
      name: `mibmz-${sfx}`,
      subnetCidr: '10.231.224.0/20',
      bootDelayMs: 1000,
    }),
  ]);
  for (const cloud of [aws, ibmz]) await storeCloudSecrets(scope, cloud);
  await scope.setHostConfig({
    'dynamic-platforms': [AWS, AWS_SLOW, AWS_FLEET, IBMZ].join(','),
    ...machinePlatformKeys(aws, AWS, tags.aws),
    ...machinePlatformKeys(aws, AWS_SLOW, tags.slow, { 'allocation-timeout': '6' }),
    ...machinePlatformKeys(aws, AWS_FLEET, tags.fleet, { 'max-instances': '6' }),
    ...machinePlatformKeys(ibmz, IBMZ, tags.ibmz),
  });
  ({ worker, bridge, machines, joiner } = await startMachineEngine(scope, workerEnv()));
}, 180_000);

afterAll(async () => {
  machines?.stopWatches();
  await tearDown([bridge, worker], joiner);
  await Promise.all([aws?.stop(), ibmz?.stop()]);
  await scope?.dispose();
});

const noneLive = (tag: string, cloud: () => VmCloud) =>
  waitFor(
    `no ${tag} VM left`,
    async () => ((await cloud().liveInstances(tag)).length ? undefined : true),
    {
      timeoutMs: 60_000,
    },
  );

describe('a HostflowMachine on a dynamic platform', () => {
  it('runs on an EC2 VM of its own, aws:///<zone>/<id> in its failure domain; a VM terminated out of band is said, never re-created', async () => {
    const { running, phases } = await machines.createRunning('a1', AWS, joiner.script());
    expect(phases.at(-1)).toBe('Running');
    const [id] = await aws.liveInstances(tags.aws);
    const zone = /^aws:\/\/\/([a-z0-9-]+)\//.exec(running.spec.providerID ?? '')?.[1];
    expect(running.spec.providerID).toBe(`aws:///${zone}/${id}`);
    expect((await machines.infrastructure('a1'))?.status).toMatchObject({
      failureDomain: zone,
      instanceID: id,
    });

    await aws.failInstance(id!);
    const failed = await machines.readyReason('a1', 'InstanceTerminated', 60_000);
    expect(machines.condition(failed, CONDITION.ready)?.message).toMatch(
      new RegExp(`aws instance ${id} is \\w+, not by hostflow: it is not re-created`),
    );
    // Cluster API core says so on the Machine, where a MachineHealthCheck looks.
    await machines.until(
      'a1',
      'to mirror InstanceTerminated',
      (m) => machines.condition(m, 'InfrastructureReady')?.reason === 'InstanceTerminated',
    );
    await machines.eventsInclude('a1', 'InstanceTerminated');
    await new Promise((r) => setTimeout(r, 3_000));
    // Nothing launched in its place; the stopped VM is kept for a look until the Machine goes.
    expect(await aws.liveInstances(tags.aws)).toEqual([id]);

    await machines.delete('a1');
    await machines.gone('a1');
    await noneLive(tags.aws, () => aws);
  }, 240_000);

  it('launches exactly one VM when its worker is killed mid-launch, and terminates it on delete', async () => {
    await machines.bootstrapSecret('a2-bootstrap', joiner.script());
    // SIGKILL as the launch request reaches the cloud: the VM is created, its answer is lost.
    let killed: Promise<void> | undefined;
    aws.onNextLaunch(() => void (killed = worker.kill()));
    await machines.create('a2', { platform: AWS });
    await waitFor('the worker killed mid-launch', async () => killed && (await killed, true), {
      timeoutMs: 60_000,
    });
    worker = await startWorker(scope, workerEnv());
    await machines.phase('a2', 'Running', 150_000);
    expect(await aws.liveInstances(tags.aws)).toHaveLength(1);
    await machines.delete('a2');
    await machines.gone('a2');
    await noneLive(tags.aws, () => aws);
  }, 240_000);

  it('says why when its VM never boots, and leaves no VM behind', async () => {
    await machines.bootstrapSecret('a3-bootstrap', joiner.script());
    aws.hangBoots(1);
    await machines.create('a3', { platform: AWS_SLOW });
    const failed = await machines.readyReason('a3', 'InfrastructureFailed', 60_000);
    expect(machines.condition(failed, CONDITION.ready)?.message).toMatch(
      /did not answer SSH within allocation-timeout \(6s\)/,
    );
    await machines.eventsInclude('a3', 'FailedCreate');
    await noneLive(tags.slow, () => aws);
    await machines.delete('a3');
    await machines.gone('a3');
  }, 120_000);

  it('runs on an IBM VPC VM named ibm:///<zone>/<id>, terminated on delete', async () => {
    await machines.bootstrapSecret('z1-bootstrap', joiner.script());
    await machines.create('z1', { platform: IBMZ });
    const running = await machines.phase('z1', 'Running', 150_000);
    const [id] = await ibmz.liveInstances(tags.ibmz);
    expect(running.spec.providerID).toBe(`ibm:///${ibmz.providerKeys.region}/${id}`);
    await machines.delete('z1');
    await machines.gone('z1');
    await noneLive(tags.ibmz, () => ibmz);
  }, 240_000);
});

describe('a MachineDeployment of HostflowMachines, run by Cluster API core', () => {
  /** Waits until the deployment has `count` Machines, every one Running on a live VM of its own. */
  async function runningFleet(name: string, count: number) {
    return waitFor(
      `MachineDeployment ${name} to run ${count} Machines`,
      async () => {
        const all = await machines.ofDeployment(name);
        const live = await aws.liveInstances(tags.fleet);
        const running = all.filter((m) => m.status?.phase === 'Running');
        return all.length === count && running.length === count && live.length === count
          ? running
          : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 500 },
    );
  }
  const providerIds = (fleet: Array<{ spec: { providerID?: string } }>) =>
    fleet.map((m) => m.spec.providerID!).sort();

  it('scales 3 to 5 to 2: one VM per Machine, each terminated with its Machine', async () => {
    await machines.bootstrapSecret('fleet-bootstrap', joiner.script());
    await machines.createDeployment('fleet', {
      platform: AWS_FLEET,
      replicas: 3,
      secret: 'fleet-bootstrap',
    });
    const three = await runningFleet('fleet', 3);
    expect(new Set(providerIds(three)).size).toBe(3);
    // Each HostflowMachine was cloned from the template, and is its Machine's.
    const infra = (await machines.infrastructure(three[0]!.spec.infrastructureRef!.name!))!;
    expect(infra.metadata.annotations).toMatchObject({
      'cluster.x-k8s.io/cloned-from-name': 'fleet',
    });

    await machines.scaleDeployment('fleet', 5);
    const five = await runningFleet('fleet', 5);
    expect(providerIds(five)).toEqual(expect.arrayContaining(providerIds(three)));

    await machines.scaleDeployment('fleet', 2);
    const two = await runningFleet('fleet', 2);
    expect(providerIds(five)).toEqual(expect.arrayContaining(providerIds(two)));
    const ids = await aws.liveInstances(tags.fleet);
    expect(
      providerIds(two)
        .map((p) => p.split('/').pop())
        .sort(),
    ).toEqual([...ids].sort());
  }, 600_000);

  it('rolls every Machine onto a new template, one VM at a time', async () => {
    const before = providerIds(await runningFleet('fleet', 2));
    await scope.kube.custom.createNamespacedCustomObject({
      group: 'infrastructure.hostflow.dev',
      version: 'v1alpha1',
      plural: 'hostflowmachinetemplates',
      namespace: scope.namespace,
      body: {
        apiVersion: 'infrastructure.hostflow.dev/v1alpha1',
        kind: 'HostflowMachineTemplate',
        metadata: { name: 'fleet-v2' },
        spec: { template: { spec: { platform: AWS_FLEET } } },
      },
    });
    await scope.kube.custom.patchNamespacedCustomObject(
      {
        ...MACHINE_API,
        plural: 'machinedeployments',
        namespace: scope.namespace,
        name: 'fleet',
        body: {
          spec: {
            template: {
              spec: {
                infrastructureRef: {
                  apiGroup: 'infrastructure.hostflow.dev',
                  kind: 'HostflowMachineTemplate',
                  name: 'fleet-v2',
                },
              },
            },
          },
        },
      },
      MERGE_PATCH,
    );
    const after = await waitFor(
      'every Machine of fleet to be on fleet-v2',
      async () => {
        const all = await runningFleet('fleet', 2);
        const infras = await Promise.all(
          all.map((m) => machines.infrastructure(m.spec.infrastructureRef!.name!)),
        );
        return infras.every(
          (i) => i?.metadata.annotations?.['cluster.x-k8s.io/cloned-from-name'] === 'fleet-v2',
        )
          ? all
          : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 1000 },
    );
    // New VMs, and no VM of the old ones left.
    expect(providerIds(after).filter((id) => before.includes(id))).toEqual([]);
  }, 420_000);

  it('is healed by a MachineHealthCheck when a VM is terminated out of band', async () => {
    await scope.kube.custom.createNamespacedCustomObject({
      ...MACHINE_API,
      plural: 'machinehealthchecks',
      namespace: scope.namespace,
      body: {
        apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
        kind: 'MachineHealthCheck',
        metadata: { name: 'fleet' },
        spec: {
          clusterName: 'workload',
          selector: { matchLabels: { deployment: 'fleet' } },
          checks: {
            unhealthyMachineConditions: [
              { type: 'InfrastructureReady', status: 'False', timeoutSeconds: 5 },
            ],
          },
        },
      },
    });
    const [victim, survivor] = await runningFleet('fleet', 2);
    const victimId = victim!.spec.providerID!.split('/').pop()!;
    await aws.failInstance(victimId);
    const healed = await waitFor(
      'the MachineHealthCheck to have the Machine replaced',
      async () => {
        const all = await machines.ofDeployment('fleet');
        const names = all.map((m) => m.metadata.name);
        const running = all.filter((m) => m.status?.phase === 'Running');
        return !names.includes(victim!.metadata.name) && running.length === 2 ? all : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 1000 },
    );
    expect(healed.map((m) => m.metadata.name)).toContain(survivor!.metadata.name);
    // Its VM went with it; the new Machine has a VM of its own.
    await waitFor('the terminated VM to be gone and two live', async () => {
      const live = await aws.liveInstances(tags.fleet);
      return live.length === 2 && !live.includes(victimId) ? true : undefined;
    });

    await machines.scaleDeployment('fleet', 0);
    await runningFleet('fleet', 0);
    await noneLive(tags.fleet, () => aws);
  }, 420_000);
});
