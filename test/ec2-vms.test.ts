// moto's EC2 instances behave like VMs: the AWS provider launches into the supervisor's subnet,
// and after a boot delay a real sshd answers at the instance's address as ec2-user.
// Addresses are only ever probed while a host of this test keeps the bridge (hfbr0) up, so a probe
// of an address with no host stays on the machine instead of following the default route.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AwsProvider } from '../activities/cloud/aws.js';
import { OWNER_TAG_KEY, TASKRUN_TAG_KEY } from '../activities/cloud/provider.js';
import { startEc2Vms, type Ec2Vms } from '../local-stack/ec2-vms.js';
import { run } from '../local-stack/netns.js';
import { waitFor } from '../local-stack/process.js';
import { startSshHosts, type SshHostPool } from '../local-stack/ssh-hosts.js';
import type { AwsConfig } from '../platform-config/aws-config.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { listens, sshCommand } from './support/ssh.js';
import { expectFailure } from './support/failures.js';

const MOTO = { accessKeyId: 'testing', secretAccessKey: 'testing' };
const BOOT_DELAY_MS = 4000;

const owner = { key: OWNER_TAG_KEY, value: `ec2-vms-${uniqueSuffix()}` };

function provider(subnetId: string, endpoint = testEnv('motoEndpoint')) {
  const config: AwsConfig = {
    region: 'us-east-1',
    ami: 'ami-760aaa0f',
    instanceType: 't4g.medium',
    keyName: 'builder',
    awsSecret: 'awsiam',
    strictPublicAddress: false,
    disk: { sizeGb: 40 },
    subnetId,
  };
  return new AwsProvider({ configName: 'linux-arm64', config, credentials: MOTO, endpoint });
}

const launch = (p: AwsProvider) => {
  const name = `tr-${uniqueSuffix()}`;
  return p.launch({
    name: `multi-platform-builder-${name}`,
    owner,
    tags: { [TASKRUN_TAG_KEY]: `builds:${name}` },
    idempotencyKey: `taskrun/builds/${name}`,
  });
};

/** Probes only over the bridge: never lets a packet for a hostless address leave the machine. */
async function listensOnBridge(address: string): Promise<boolean> {
  const route = await run('ip', ['route', 'get', address]);
  expect(route.stdout).toMatch(/ dev hfbr0 /);
  return listens(address, 1500);
}

async function netnsFor(instanceId: string): Promise<string[]> {
  const list = (await run('ip', ['netns', 'list'])).stdout.split('\n');
  return list.filter((line) => line.includes(instanceId));
}

describe('EC2 instances as VMs (moto + SSH test hosts)', () => {
  let vms: Ec2Vms;
  let bridgeHolder: SshHostPool;
  let aws: AwsProvider;
  const stateDir = join(tmpdir(), `hostflow-ec2-vms-test-${process.pid}`);

  beforeAll(async () => {
    // One plain host keeps hfbr0 up for the whole file (see the header).
    [bridgeHolder, vms] = await Promise.all([
      startSshHosts({ count: 1, stateDir: `${stateDir}-pool`, prefix: `hfe${process.pid}` }),
      startEc2Vms({
        endpoint: testEnv('motoEndpoint'),
        stateDir,
        bootDelayMs: BOOT_DELAY_MS,
        pollMs: 200,
      }),
    ]);
    aws = provider(vms.subnetId);
  }, 60_000);

  afterAll(async () => {
    aws?.destroy();
    await vms?.stop();
    await bridgeHolder?.stop();
    expect(vms ? (await run('ip', ['netns', 'list'])).stdout : '').not.toMatch(
      new RegExp(`hfec2${process.pid}-`),
    );
  }, 60_000);

  it('boots a launched instance into an SSH host at its address, and terminating stops it', async () => {
    const t0 = Date.now();
    const launched = await launch(aws);
    expect(launched.address).toMatch(/^10\.231\.(12[89]|13\d|14[0-3])\.\d+$/);
    const address = launched.address!;

    // Still booting: no host, and nothing listens at the address.
    expect(vms.hosts().has(launched.id)).toBe(false);
    expect(await listensOnBridge(address)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(BOOT_DELAY_MS);

    const host = await waitFor('the VM to boot', () => vms.hosts().get(launched.id), {
      timeoutMs: 30_000,
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(BOOT_DELAY_MS);
    expect(host.address).toBe(address);
    expect(host.adminUser).toBe('ec2-user');
    expect(aws.sshUser).toBe('ec2-user');
    expect((await aws.describe(launched.id))?.state).toBe('running');
    const { stdout: out } = await sshCommand(
      {
        address,
        user: 'ec2-user',
        privateKey: vms.adminPrivateKey,
        hostPublicKey: host.hostPublicKey,
      },
      'id -un; sudo -n id -u',
    );
    expect(out.split('\n')).toEqual(['ec2-user', '0', '']);
    expect(await netnsFor(launched.id)).toHaveLength(1);

    await aws.terminate(launched.id);
    await waitFor('the VM host to stop', async () =>
      !vms.hosts().has(launched.id) && (await netnsFor(launched.id)).length === 0
        ? true
        : undefined,
    );
    expect((await aws.describe(launched.id))?.state).toBe('terminated');
    expect(vms.errors()).toEqual([]);
  }, 60_000);

  it('keeps a hung boot running without SSH', async () => {
    vms.hangBoot('next');
    const launched = await launch(aws);
    await new Promise((r) => setTimeout(r, BOOT_DELAY_MS + 1000));
    expect((await aws.describe(launched.id))?.state).toBe('running');
    expect(vms.hosts().has(launched.id)).toBe(false);
    expect(await netnsFor(launched.id)).toEqual([]);
    expect(await listensOnBridge(launched.address!)).toBe(false);
    await aws.terminate(launched.id);
  }, 60_000);

  it('fails an instance: EC2 reports it stopped and its host goes', async () => {
    const launched = await launch(aws);
    await waitFor('the VM to boot', () => vms.hosts().get(launched.id), { timeoutMs: 30_000 });

    await vms.failInstance(launched.id);

    expect((await aws.describe(launched.id))?.state).toBe('stopped');
    await waitFor('the failed VM host to stop', async () =>
      !vms.hosts().has(launched.id) && (await netnsFor(launched.id)).length === 0
        ? true
        : undefined,
    );
    expect(await listensOnBridge(launched.address!)).toBe(false);
    await aws.terminate(launched.id);
  }, 60_000);

  it('throttles the API: the next calls fail retryably, then pass through to moto', async () => {
    const launched = await launch(aws);
    const throttledAws = provider(vms.subnetId, vms.throttle(2));
    try {
      for (const call of [() => throttledAws.describe(launched.id), () => launch(throttledAws)]) {
        const failure = await expectFailure(call());
        expect(failure).toMatchObject({ type: 'AwsThrottled', nonRetryable: false });
        expect(failure.message).toContain('RequestLimitExceeded 503');
      }
      expect((await throttledAws.describe(launched.id))?.id).toBe(launched.id);
    } finally {
      throttledAws.destroy();
      await aws.terminate(launched.id);
    }
  }, 60_000);

  it('stop() takes every running VM host down and leaves no namespace behind', async () => {
    const launched = await launch(aws);
    await waitFor('the VM to boot', () => vms.hosts().get(launched.id), { timeoutMs: 30_000 });
    await vms.stop();
    expect(vms.hosts().size).toBe(0);
    expect(await netnsFor(launched.id)).toEqual([]);
    expect((await aws.describe(launched.id))?.state).toBe('running'); // the cloud is untouched
    await aws.terminate(launched.id);
  }, 60_000);
});
