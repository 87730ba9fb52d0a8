// Real build pods on the local kubelet. Each TaskRun's pod is made as Tekton makes it, before its
// Secret exists (test/support/build-pods.ts: Tekton's controller cannot run here), and runs the
// Konflux remote build task's own redemption: curl the OTP for the key, ssh to the host. The
// kubelet, the sshd hosts (static, and moto's VMs for the dynamic platform) and the OTP service,
// which listens on the node's address as it would on a cluster's network, are real.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1Pod } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { nodeAddress } from '../local-stack/kubelet.js';
import { ANNOTATIONS } from '../platform-config/contract.js';
import type { TaskRunRef } from '../shared/contracts/taskrun.js';
import { buildPod, podOutcome } from '../local-stack/build-pod.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import { startVmCloud, type VmCloud } from './support/vm-cloud.js';

/** The hosts are this machine's: `uname -m` on them says what it says here. */
const ARCH = execFileSync('uname', ['-m'], { encoding: 'utf8' }).trim();
const sfx = uniqueSuffix();
const dynamicPlatform = `linux/bpaws-${sfx}`;
let pool: StaticPool;
let cloud: VmCloud;

beforeAll(async () => {
  cloud = await startVmCloud('aws', {
    name: `bp-${sfx}`,
    subnetCidr: '10.231.152.0/21',
    bootDelayMs: 500,
  });
  pool = await createStaticPool('buildpods', 1, {
    otpAddress: await nodeAddress(),
    worker: cloud.workerEnv,
  });
  for (const [name, stringData] of Object.entries(cloud.secrets)) {
    await pool.scope.kube.core.createNamespacedSecret({
      namespace: pool.scope.engineNamespace,
      body: { metadata: { name }, stringData },
    });
  }
  const cfg = `dynamic.${dynamicPlatform.replace('/', '-')}`;
  await pool.scope.setHostConfig({
    ...pool.hostEntries([{ host: 0 }]),
    'dynamic-platforms': dynamicPlatform,
    [`${cfg}.type`]: 'aws',
    ...Object.fromEntries(
      Object.entries(cloud.providerKeys).map(([key, value]) => [`${cfg}.${key}`, value]),
    ),
    [`${cfg}.ssh-secret`]: 'vm-ssh',
    [`${cfg}.instance-tag`]: `hfbp-${sfx}`,
    [`${cfg}.max-instances`]: '2',
    [`${cfg}.check-interval`]: '1',
    [`${cfg}.allocation-timeout`]: '60',
  });
});

afterAll(async () => {
  await pool?.dispose();
  await cloud?.stop();
});

const core = () => pool.scope.kube.core;

/** A TaskRun and, at once, its pod: the pod waits for the Secret as it does in a cluster. */
async function buildFor(name: string, platform: string, extra?: (tr: TaskRunRef) => V1Pod[]) {
  const tr = await pool.scope.taskRuns.create({ name, platform });
  for (const body of [buildPod(tr, { image: testEnv('buildStepImage') }), ...(extra?.(tr) ?? [])])
    await core().createNamespacedPod({ namespace: tr.namespace, body });
  return tr;
}

const secretVersion = async (tr: TaskRunRef) =>
  (
    await core().readNamespacedSecret({
      name: `multi-platform-ssh-${tr.name}`,
      namespace: tr.namespace,
    })
  ).metadata!.resourceVersion;

describe("a TaskRun's real build pod", () => {
  it('on a static platform redeems its OTP with curl, logs in to the host, and runs there', async () => {
    const tr = await buildFor('static-build', pool.platform, (own) => {
      // Labelled as the TaskRun's but not owned by it: hostflow leaves it alone.
      // It only reads the Secret: the OTP is the build's to redeem, once.
      const byHand = buildPod(own, {
        image: testEnv('buildStepImage'),
        owned: false,
        script: 'cat /ssh/host',
      });
      return [{ ...byHand, metadata: { ...byHand.metadata, name: `${own.name}-by-hand` } }];
    });
    const { phase, log, pod } = await podOutcome(core(), tr.namespace, `${tr.name}-pod`);
    const secret = await pool.scope.taskRuns.waitForSecret(tr.name);
    const [user] = secret.host!.split('@') as [string, string];
    expect({ phase, log: log.trim().split('\n').slice(-2) }).toEqual({
      phase: 'Succeeded',
      log: [user, ARCH],
    });
    // The build made its folders in its user's build directory on the host.
    const { stdout } = await pool.hosts[0]!.exec(['ls', secret['user-dir']!]);
    expect(stdout.trim().split('\n')).toEqual(['scripts', 'volumes', 'workspaces']);
    // Told of its Secret once it was written, as the original controller tells the pod.
    expect(pod.metadata?.annotations?.[ANNOTATIONS.secretWritten]).toBe(await secretVersion(tr));
    const byHand = await core().readNamespacedPod({
      name: `${tr.name}-by-hand`,
      namespace: tr.namespace,
    });
    expect(byHand.metadata?.annotations?.[ANNOTATIONS.secretWritten]).toBeUndefined();
  });

  it('on a dynamic platform logs in to the VM launched for it', async () => {
    const tr = await buildFor('dynamic-build', dynamicPlatform);
    const { phase, log, pod } = await podOutcome(core(), tr.namespace, `${tr.name}-pod`);
    const secret = await pool.scope.taskRuns.waitForSecret(tr.name);
    const [user, address] = secret.host!.split('@') as [string, string];
    expect({ phase, log: log.trim().split('\n').slice(-2) }).toEqual({
      phase: 'Succeeded',
      log: [user, ARCH],
    });
    expect(address.startsWith('10.231.15')).toBe(true); // the VM's, in the cloud's subnet
    expect(pod.metadata?.annotations?.[ANNOTATIONS.secretWritten]).toBe(await secretVersion(tr));
  });

  it('for a platform nobody serves ends with the error its Secret carries', async () => {
    const tr = await buildFor('nowhere-build', `linux/nowhere-${sfx}`);
    const { phase, log } = await podOutcome(core(), tr.namespace, `${tr.name}-pod`);
    expect(phase).toBe('Failed');
    expect(log).toContain(`platform linux/nowhere-${sfx} is not configured`);
  });
});
