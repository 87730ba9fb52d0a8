// One shape over the clouds the dynamic tests run against: moto's EC2 (aws) and the IBM double
// (ibmz, ibmp), each with its instances behaving like VMs (ec2-vms.ts, ibm-vms.ts). The
// scenarios in cloud-scenarios.ts run unchanged against each.
import {
  DescribeInstancesCommand,
  EC2Client,
  RunInstancesCommand,
  type Instance as Ec2Instance,
} from '@aws-sdk/client-ec2';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { MOTO_REQUEST_HANDLER, startEc2Vms } from '../../local-stack/ec2-vms.js';
import { startIbmVms } from '../../local-stack/ibm-vms.js';
import type { SshHost } from '../../local-stack/ssh-hosts.js';
import { OWNER_TAG_KEY } from '../../platform-config/contract.js';
import { testEnv } from './env.js';

export interface VmCloud {
  kind: 'aws' | 'ibmz' | 'ibmp';
  /** The provider's `dynamic.<cfg>.*` keys (without the prefix). */
  providerKeys: Record<string, string>;
  /** Secrets for the engine namespace: credentials and the VMs' admin key (ssh-secret vm-ssh). */
  secrets: Record<string, Record<string, string>>;
  workerEnv: NodeJS.ProcessEnv;
  /** Ids of instances with this owner tag that are not terminated. */
  liveInstances(ownerTag: string): Promise<string[]>;
  hosts(): Map<string, SshHost>;
  /** What went wrong bringing the VMs' hosts up or down (a VM whose host never started hangs). */
  errors(): string[];
  hangBoots(n: number): void;
  /** EC2 only: the next VM is an impostor with a host key of its own (ec2-vms.ts). */
  impostorNext?(): void;
  /** EC2 only: who logged in to that impostor, once its host stopped. */
  impostorLogins?(id: string): string[] | undefined;
  /** EC2 only: the instances made impostors so far. */
  impostors?(): string[];
  failInstance(id: string): Promise<void>;
  /** The next n API calls of the worker are refused (throttled). */
  refuseCalls(n: number): void;
  /** Every describe call of the worker is refused (throttled) while on: EC2 only. */
  refuseDescribes?(on: boolean): void;
  /** Calls `fn` once, as the next launch request reaches the cloud (before it is answered). */
  onNextLaunch(fn: () => void): void;
  /** Creates an instance with the owner tag behind the engine's back (an orphan). */
  seedOrphan(ownerTag: string): Promise<string>;
  stop(): Promise<void>;
}

const MOTO_CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' }; // not secrets

export async function startVmCloud(
  kind: VmCloud['kind'],
  opts: { name: string; subnetCidr: string; bootDelayMs: number },
): Promise<VmCloud> {
  const stateDir = join(testEnv('stateDir'), `vms-${opts.name}`);
  let launchHook: (() => void) | undefined;
  const launched = () => {
    const hook = launchHook;
    launchHook = undefined;
    hook?.();
  };
  if (kind === 'aws') {
    const vms = await startEc2Vms({
      endpoint: testEnv('motoEndpoint'),
      stateDir,
      bootDelayMs: opts.bootDelayMs,
      pollMs: 200,
      subnetCidr: opts.subnetCidr,
      onProxiedCall: (params) => {
        if (params.get('Action') === 'RunInstances') launched();
      },
    });
    const ec2 = new EC2Client({
      endpoint: testEnv('motoEndpoint'),
      region: 'us-east-1',
      credentials: MOTO_CREDENTIALS,
      requestHandler: MOTO_REQUEST_HANDLER,
    });
    const owned = async (ownerTag: string): Promise<Ec2Instance[]> => {
      const out = await ec2.send(
        new DescribeInstancesCommand({
          Filters: [{ Name: `tag:${OWNER_TAG_KEY}`, Values: [ownerTag] }],
        }),
      );
      return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
    };
    return {
      kind,
      providerKeys: {
        region: 'us-east-1',
        ami: 'ami-760aaa0f',
        'instance-type': 't3.micro',
        'key-name': 'hostflow',
        'aws-secret': 'aws-creds',
        'subnet-id': vms.subnetId,
      },
      secrets: {
        'aws-creds': { 'access-key-id': 'testing', 'secret-access-key': 'testing' },
        'vm-ssh': { id_rsa: vms.adminPrivateKey },
      },
      // Through the supervisor's proxy, so a test can make EC2 refuse the worker's calls.
      workerEnv: { HOSTFLOW_AWS_ENDPOINT: vms.proxyEndpoint },
      liveInstances: async (ownerTag) =>
        (await owned(ownerTag))
          .filter((i) => !['terminated', 'shutting-down'].includes(i.State?.Name ?? ''))
          .map((i) => i.InstanceId!),
      hosts: () => vms.hosts(),
      errors: () => vms.errors(),
      hangBoots: (n) => {
        for (let i = 0; i < n; i++) vms.hangBoot('next');
      },
      failInstance: (id) => vms.failInstance(id),
      impostorNext: () => vms.impostorNext(),
      impostorLogins: (id) => vms.impostorLogins(id),
      impostors: () => vms.impostors(),
      refuseCalls: (n) => void vms.throttle(n),
      refuseDescribes: (on) => vms.throttleAction('DescribeInstances', on),
      onNextLaunch: (fn) => void (launchHook = fn),
      async seedOrphan(ownerTag) {
        const out = await ec2.send(
          new RunInstancesCommand({
            ImageId: 'ami-760aaa0f',
            InstanceType: 't3.micro',
            MinCount: 1,
            MaxCount: 1,
            SubnetId: vms.subnetId,
            TagSpecifications: [
              {
                ResourceType: 'instance',
                Tags: [{ Key: OWNER_TAG_KEY, Value: ownerTag }],
              },
            ],
          }),
        );
        return out.Instances![0]!.InstanceId!;
      },
      async stop() {
        ec2.destroy();
        await vms.stop();
      },
    };
  }

  const apiKey = `ibm-test-key-${randomBytes(12).toString('hex')}`; // scanned for in histories
  const vms = await startIbmVms({
    stateDir,
    subnetCidr: opts.subnetCidr,
    bootDelayMs: opts.bootDelayMs,
    apiKeys: [apiKey],
    onRequest: (r) => {
      if (r.method === 'POST' && /\/(instances|pvm-instances)$/.test(r.path)) launched();
    },
  });
  const { double } = vms;
  const api = kind === 'ibmz' ? 'vpc' : 'power';
  const providerKeys: Record<string, string> =
    kind === 'ibmz'
      ? {
          region: double.vpc.zone,
          key: double.vpc.key,
          subnet: double.vpc.subnet,
          vpc: double.vpc.vpc,
          'image-id': double.vpc.image,
          profile: double.vpc.profile,
          url: double.vpcUrl,
          secret: 'ibm-creds',
        }
      : {
          key: double.power.key,
          image: double.power.image,
          crn: double.power.crn,
          network: double.power.network,
          cores: '0.5',
          memory: '4',
          url: double.powerUrl,
          secret: 'ibm-creds',
        };
  return {
    kind,
    providerKeys,
    secrets: {
      'ibm-creds': { 'api-key': apiKey },
      'vm-ssh': { id_rsa: vms.adminPrivateKey },
    },
    workerEnv: { HOSTFLOW_IBM_IAM_ENDPOINT: double.iamUrl },
    liveInstances: async (ownerTag) =>
      double
        .instances()
        .filter((i) => i.api === api && i.name.startsWith(`${ownerTag}-`))
        .map((i) => i.id),
    hosts: () => vms.hosts(),
    errors: () => vms.errors(),
    hangBoots: (n) => vms.hangBoots(n),
    failInstance: (id) => vms.failInstance(id),
    refuseCalls: (n) => double.throttle(n),
    onNextLaunch: (fn) => void (launchHook = fn),
    // Named as a launch of this owner tag names its instances: the tag and a 16-hex hash.
    seedOrphan: async (ownerTag) => double.seedInstance(api, `${ownerTag}-${'0f'.repeat(8)}`).id,
    stop: () => vms.stop(),
  };
}
