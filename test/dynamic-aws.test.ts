// Dynamic AWS platforms end to end: moto's EC2 with its instances behaving like VMs (an sshd
// host answers at the instance's address after a boot delay), the OTP service, the real
// bridge and worker. One VM per TaskRun, within max-instances, terminated at the end.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { join } from 'node:path';
import { startEc2Vms, type Ec2Vms } from '../local-stack/ec2-vms.js';
import { startOtpService, type OtpService } from '../local-stack/otp-service.js';
import { waitFor } from '../local-stack/process.js';
import { ANNOTATIONS, LABELS, WORKFLOW_ID } from '../platform-config/contract.js';
import { startBridge, startWorker, type EngineProcess } from './support/engine.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { createScope, type TestScope } from './support/scope.js';

const sfx = uniqueSuffix();
const platform = `linux/d-${sfx}`;
const cfg = `dynamic.linux-d-${sfx}`;
const ownerTag = `hf-${sfx}`;
let scope: TestScope;
let vms: Ec2Vms;
let otp: OtpService;
let worker: EngineProcess;
let bridge: EngineProcess;
const ec2 = new EC2Client({
  endpoint: testEnv('motoEndpoint'),
  region: 'us-east-1',
  credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' }, // moto accepts any; not secrets
});

function hostConfig(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    'dynamic-platforms': platform,
    'instance-tag': ownerTag,
    'additional-instance-tags': 'team=builds',
    [`${cfg}.type`]: 'aws',
    [`${cfg}.region`]: 'us-east-1',
    [`${cfg}.ami`]: 'ami-760aaa0f',
    [`${cfg}.instance-type`]: 't3.micro',
    [`${cfg}.key-name`]: 'hostflow',
    [`${cfg}.aws-secret`]: 'aws-creds',
    [`${cfg}.ssh-secret`]: 'vm-ssh',
    [`${cfg}.subnet-id`]: vms.subnetId,
    [`${cfg}.max-instances`]: '2',
    [`${cfg}.check-interval`]: '1',
    [`${cfg}.allocation-timeout`]: '60',
    ...overrides,
  };
}

/** Instances of this test's owner tag that are not terminated. */
async function liveInstances(): Promise<string[]> {
  const out = await ec2.send(
    new DescribeInstancesCommand({
      Filters: [{ Name: 'tag:multi-platform-instance', Values: [ownerTag] }],
    }),
  );
  return (out.Reservations ?? [])
    .flatMap((r) => r.Instances ?? [])
    .filter((i) => !['terminated', 'shutting-down'].includes(i.State?.Name ?? ''))
    .map((i) => i.InstanceId!);
}

beforeAll(async () => {
  scope = await createScope('dynamic');
  vms = await startEc2Vms({
    endpoint: testEnv('motoEndpoint'),
    stateDir: join(testEnv('stateDir'), `ec2-vms-${sfx}`),
    bootDelayMs: 1500,
    pollMs: 200,
    subnetCidr: '10.231.144.0/20',
  });
  const core = scope.kube.core;
  const ns = scope.engineNamespace;
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'aws-creds' },
      stringData: { 'access-key-id': 'testing', 'secret-access-key': 'testing' },
    },
  });
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'vm-ssh' }, stringData: { id_rsa: vms.adminPrivateKey } },
  });
  await scope.setHostConfig(hostConfig());
  otp = await startOtpService({
    stateDir: join(testEnv('stateDir'), `otp-dynamic-${sfx}`),
    kubeconfig: testEnv('kubeconfig'),
    namespace: ns,
  });
  worker = await startWorker(scope, {
    ...otp.workerEnv,
    // Through the supervisor's proxy, so a test can make EC2 throttle the worker's calls.
    HOSTFLOW_AWS_ENDPOINT: vms.proxyEndpoint,
  });
  bridge = await startBridge(scope);
});

afterAll(async () => {
  await Promise.all([bridge?.stop(), worker?.stop(), otp?.stop()]);
  await vms?.stop();
  await scope?.dispose();
});

describe('a dynamic AWS platform', () => {
  it('launches a VM per TaskRun, serves a build user on it, and terminates it on completion', async () => {
    const tr = await scope.taskRuns.create({ name: 'one-vm', platform });
    const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
    expect(Object.keys(secret).sort()).toEqual(['host', 'otp', 'otp-ca', 'otp-server', 'user-dir']);
    const meta = (await scope.taskRuns.get(tr.name)).metadata;
    const instanceId = meta.annotations?.[ANNOTATIONS.cloudInstanceId];
    expect(instanceId).toMatch(/^i-/);
    expect(meta.labels?.[LABELS.assignedHost]).toBe(instanceId);
    const address = meta.annotations?.[ANNOTATIONS.cloudAddress];
    expect(secret.host).toBe(`${secret.host!.split('@')[0]}@${address}`);
    expect(vms.hosts().get(instanceId!)?.address).toBe(address);
    const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId!] }));
    const tags = Object.fromEntries(
      (described.Reservations?.[0]?.Instances?.[0]?.Tags ?? []).map((t) => [t.Key, t.Value]),
    );
    expect(tags).toMatchObject({
      'multi-platform-instance': ownerTag,
      'hostflow.dev/taskrun': `${scope.namespace}:${tr.name}`,
      team: 'builds',
    });
    const user = secret.host!.split('@')[0]!;
    const host = vms.hosts().get(instanceId!)!;
    expect((await host.exec(['getent', 'passwd', user])).code).toBe(0);

    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name, 60_000);
    expect(await liveInstances()).not.toContain(instanceId);
  });

  it('never runs more than max-instances VMs: later TaskRuns wait, then get one', async () => {
    const names = ['cap-a', 'cap-b', 'cap-c'];
    let maxLive = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxLive = Math.max(maxLive, (await liveInstances()).length);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    for (const name of names) await scope.taskRuns.create({ name, platform });
    await waitFor(
      'two TaskRuns served and one waiting',
      async () => {
        const served = (await Promise.all(names.map((n) => scope.taskRuns.secret(n)))).filter(
          Boolean,
        ).length;
        const waiting = (await Promise.all(names.map((n) => scope.taskRuns.get(n)))).filter(
          (t) => t.metadata.labels?.[LABELS.waitingForPlatform],
        ).length;
        return served === 2 && waiting === 1 ? true : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const servedFirst: string[] = [];
    for (const name of names) if (await scope.taskRuns.secret(name)) servedFirst.push(name);
    await scope.taskRuns.complete(servedFirst[0]!);
    const last = names.find((n) => !servedFirst.includes(n))!;
    await scope.taskRuns.waitForSecret(last, 60_000);
    for (const name of names) await scope.taskRuns.complete(name);
    for (const name of names) await scope.taskRuns.waitForSecretGone(name, 60_000);
    sampling = false;
    await sampler;
    expect(maxLive).toBeLessThanOrEqual(2);
    expect(maxLive).toBe(2);
    await waitFor('every VM terminated', async () =>
      (await liveInstances()).length === 0 ? true : undefined,
    );
  });

  it('keeps retrying a terminate that EC2 refuses for a while, until the VM is gone', async () => {
    const tr = await scope.taskRuns.create({ name: 'throttled-terminate', platform });
    await scope.taskRuns.waitForSecret(tr.name, 60_000);
    const instanceId = (await scope.taskRuns.get(tr.name)).metadata.annotations?.[
      ANNOTATIONS.cloudInstanceId
    ];
    vms.throttle(4); // the next 4 EC2 calls of the worker get RequestLimitExceeded
    await scope.taskRuns.complete(tr.name);
    await scope.taskRuns.waitForSecretGone(tr.name, 90_000);
    expect(await liveInstances()).not.toContain(instanceId);
    // The terminate activity's recorded start is its last, successful attempt: after the refusals.
    const history = await scope.temporal.client.workflow
      .getHandle(WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid))
      .fetchHistory();
    const scheduled = history.events!.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'terminateInstance',
    )!;
    const started = history.events!.find(
      (e) =>
        e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() ===
        scheduled.eventId?.toString(),
    )!;
    expect(started.activityTaskStartedEventAttributes!.attempt).toBeGreaterThan(1);
  });

  it('replaces a VM that never boots, then gives up with an error Secret, leaving no VM', async () => {
    await scope.setHostConfig(hostConfig({ [`${cfg}.allocation-timeout`]: '3' }));
    try {
      for (let i = 0; i < 3; i++) vms.hangBoot('next');
      const tr = await scope.taskRuns.create({ name: 'never-boots', platform });
      const data = await scope.taskRuns.waitForSecret(tr.name, 90_000);
      expect(data.error).toMatch(/no linux\/d-[0-9a-f]+ VM became usable after 3 launches/);
      expect(data.error).toMatch(/did not answer SSH within allocation-timeout \(3s\)/);
      await waitFor('the hung VMs to be terminated', async () =>
        (await liveInstances()).length === 0 ? true : undefined,
      );
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name);
    } finally {
      await scope.setHostConfig(hostConfig());
    }
  });
});
