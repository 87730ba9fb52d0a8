// Cluster API Machines on dynamic platforms, end to end: moto's EC2 and the IBM VPC double, whose
// instances boot into real sshd hosts, with real bridge and worker processes. The bootstrap data
// registers the Node (test/support/node-join.ts stands in for kubeadm join and a kubelet).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { CONDITION } from '../shared/machine-api.js';
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
const IBMZ = `linux/mibmz-${sfx}`;
const tags = { aws: `hfmaws-${sfx}`, slow: `hfmawss-${sfx}`, ibmz: `hfmibmz-${sfx}` };
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
    'dynamic-platforms': [AWS, AWS_SLOW, IBMZ].join(','),
    ...machinePlatformKeys(aws, AWS, tags.aws),
    ...machinePlatformKeys(aws, AWS_SLOW, tags.slow, { 'allocation-timeout': '6' }),
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

describe('a Machine on a dynamic platform', () => {
  it('runs on an EC2 VM of its own, named aws:///<zone>/<id>; a VM that dies makes it Failed, never re-created', async () => {
    const { running, phases } = await machines.createRunning('a1', AWS, joiner.script());
    expect(phases).toEqual(['Pending', 'Provisioning', 'Provisioned', 'Running']);
    const [id] = await aws.liveInstances(tags.aws);
    expect(running.spec.providerID).toMatch(new RegExp(`^aws:///[a-z0-9-]+/${id}$`));

    await aws.failInstance(id!);
    const failed = await machines.phase('a1', 'Failed', 60_000);
    expect(failed.status?.failureReason).toBe('UpdateError');
    expect(failed.status?.failureMessage).toMatch(
      new RegExp(`instance ${id} state \\w+ is unexpected`),
    );
    expect(machines.condition(failed, CONDITION.infrastructureReady)).toMatchObject({
      status: 'False',
      reason: 'InstanceStateUnexpected',
    });
    await machines.eventsInclude('a1', 'InstanceStateUnexpected');
    await new Promise((r) => setTimeout(r, 3_000));
    // Nothing launched in its place; the stopped VM is kept for a look until the Machine goes.
    expect(await aws.liveInstances(tags.aws)).toEqual([id]);

    await machines.delete('a1');
    await machines.gone('a1');
    await noneLive(tags.aws, () => aws);
  }, 180_000);

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
    await machines.phase('a2', 'Running', 120_000);
    expect(await aws.liveInstances(tags.aws)).toHaveLength(1);
    await machines.delete('a2');
    await machines.gone('a2');
    await noneLive(tags.aws, () => aws);
  }, 180_000);

  it('fails with CreateError when its VM never boots, and leaves no VM behind', async () => {
    await machines.bootstrapSecret('a3-bootstrap', joiner.script());
    aws.hangBoots(1);
    await machines.create('a3', { platform: AWS_SLOW });
    const failed = await machines.phase('a3', 'Failed', 60_000);
    expect(failed.status?.failureReason).toBe('CreateError');
    expect(failed.status?.failureMessage).toMatch(
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
    const running = await machines.phase('z1', 'Running', 120_000);
    const [id] = await ibmz.liveInstances(tags.ibmz);
    expect(running.spec.providerID).toBe(`ibm:///${ibmz.providerKeys.region}/${id}`);
    await machines.delete('z1');
    await machines.gone('z1');
    await noneLive(tags.ibmz, () => ibmz);
  }, 180_000);
});
