// The AWS provider against moto's EC2 (a real server on loopback), a tiny local HTTP server that
// answers like EC2 when it throttles or fails, and the real kube-apiserver for the credentials.
// moto does not model: ClientToken idempotency (hence the launch-key tag the provider looks up
// first), gp3 iops/throughput (volumes report 3000 IOPS and no throughput), Placement tenancy and
// license specifications (always "default"), nor credentials. Those are asserted on the request
// the provider builds instead.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  DescribeVolumesCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import { ApplicationFailure } from '@temporalio/common';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AwsProvider,
  LAUNCH_KEY_TAG_KEY,
  MANAGED_TAG_KEY,
  addressOf,
  buildRunInstancesInput,
  classifyAwsError,
} from '../activities/cloud/aws.js';
import { awsCredentialsFromSecret } from '../activities/cloud/aws-credentials.js';
import {
  OWNER_TAG_KEY,
  TASKRUN_TAG_KEY,
  type LaunchRequest,
} from '../activities/cloud/provider.js';
import type { AwsConfig } from '../platform-config/aws-config.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';
import { expectFailure } from './support/failures.js';

// moto accepts any credentials; these are not secrets.
const MOTO = { accessKeyId: 'testing', secretAccessKey: 'testing' };
/** A moto image whose root device is /dev/xvda, so the DescribeImages lookup is visible. */
const XVDA_AMI = 'ami-760aaa0f';

const ec2 = () =>
  new EC2Client({ endpoint: testEnv('motoEndpoint'), region: 'us-east-1', credentials: MOTO });

const baseConfig = (overrides: Partial<AwsConfig> = {}): AwsConfig => ({
  region: 'us-east-1',
  ami: XVDA_AMI,
  instanceType: 't4g.medium',
  keyName: 'builder',
  awsSecret: 'awsiam',
  strictPublicAddress: false,
  disk: { sizeGb: 40 },
  ...overrides,
});

const motoProvider = (config: AwsConfig = baseConfig()) =>
  new AwsProvider({
    configName: 'linux-arm64',
    config,
    credentials: MOTO,
    endpoint: testEnv('motoEndpoint'),
  });

const newOwner = () => ({ key: OWNER_TAG_KEY, value: `aws-test-${uniqueSuffix()}` });

function launchRequest(owner: { key: string; value: string }, name = `tr-${uniqueSuffix()}`) {
  return {
    name: `multi-platform-builder-${name}`,
    owner,
    tags: { [TASKRUN_TAG_KEY]: `builds:${name}`, team: 'build', 'cost-center': '42' },
    idempotencyKey: `taskrun/builds/${name}/uid-${uniqueSuffix()}`,
  } satisfies LaunchRequest;
}

async function describeRaw(id: string) {
  const out = await ec2().send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return out.Reservations![0].Instances![0];
}

/** moto's IAM through its query API (no IAM client in this project; moto checks no signature). */
async function createInstanceProfile(name: string): Promise<string> {
  const res = await fetch(`${testEnv('motoEndpoint')}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization:
        'AWS4-HMAC-SHA256 Credential=testing/20250101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
    },
    body: `Action=CreateInstanceProfile&InstanceProfileName=${name}&Version=2010-05-08`,
  });
  const text = await res.text();
  expect(res.status).toBe(200);
  return /<Arn>([^<]+)<\/Arn>/.exec(text)![1];
}

describe('AWS provider (moto)', () => {
  it('launches with every configured key applied', async () => {
    const client = ec2();
    const sfx = uniqueSuffix();
    const vpc = (await client.send(new CreateVpcCommand({ CidrBlock: '10.91.0.0/16' }))).Vpc!;
    const subnet = (
      await client.send(new CreateSubnetCommand({ VpcId: vpc.VpcId, CidrBlock: '10.91.7.0/24' }))
    ).Subnet!;
    const group = await client.send(
      new CreateSecurityGroupCommand({ GroupName: `b-${sfx}`, Description: 'b', VpcId: vpc.VpcId }),
    );
    const profileArn = await createInstanceProfile(`builder-${sfx}`);
    const userData = '#!/bin/bash\necho "héllo" > /tmp/x\n';
    const config = baseConfig({
      securityGroupId: group.GroupId,
      subnetId: subnet.SubnetId,
      instanceProfileName: `builder-${sfx}`,
      disk: { sizeGb: 77, iops: 4000, throughputMiBps: 250 },
      userData,
    });
    const owner = newOwner();
    const request = launchRequest(owner);

    const launched = await motoProvider(config).launch(request);

    expect(launched.id).toMatch(/^i-/);
    expect(['pending', 'running']).toContain(launched.state);
    expect(Date.parse(launched.launchedAt!)).toBeGreaterThan(Date.now() - 600_000);
    // In a subnet without public addresses the private address is the one to use.
    expect(launched.address).toMatch(/^10\.91\.7\.\d+$/);
    const raw = await describeRaw(launched.id);
    expect(raw).toMatchObject({
      ImageId: XVDA_AMI,
      InstanceType: 't4g.medium',
      KeyName: 'builder',
      SubnetId: subnet.SubnetId,
      EbsOptimized: true,
      SecurityGroups: [{ GroupId: group.GroupId }],
      IamInstanceProfile: { Arn: profileArn },
    });
    const tags = Object.fromEntries(raw.Tags!.map((t) => [t.Key, t.Value]));
    expect(tags).toEqual({
      Name: request.name,
      [OWNER_TAG_KEY]: owner.value,
      [TASKRUN_TAG_KEY]: request.tags[TASKRUN_TAG_KEY],
      team: 'build',
      'cost-center': '42',
      [MANAGED_TAG_KEY]: 'true',
      [LAUNCH_KEY_TAG_KEY]: request.idempotencyKey,
    });
    expect(launched.tags).toEqual(tags);

    // The root volume: on the image's root device (found with DescribeImages), gp3, sized, tagged.
    const root = raw.BlockDeviceMappings!.find((m) => m.DeviceName === '/dev/xvda');
    expect(root?.Ebs?.DeleteOnTermination).toBe(true);
    const volume = (
      await client.send(new DescribeVolumesCommand({ VolumeIds: [root!.Ebs!.VolumeId!] }))
    ).Volumes![0];
    expect(volume).toMatchObject({ Size: 77, VolumeType: 'gp3' });
    expect(Object.fromEntries(volume.Tags!.map((t) => [t.Key, t.Value]))).toMatchObject({
      [OWNER_TAG_KEY]: owner.value,
      Name: request.name,
    });

    const attribute = (name: 'userData' | 'instanceInitiatedShutdownBehavior') =>
      client.send(
        new DescribeInstanceAttributeCommand({ InstanceId: launched.id, Attribute: name }),
      );
    const encoded = (await attribute('userData')).UserData!.Value!;
    expect(Buffer.from(encoded, 'base64').toString('utf8')).toBe(userData);
    expect(
      (await attribute('instanceInitiatedShutdownBehavior')).InstanceInitiatedShutdownBehavior,
    ).toEqual({ Value: 'terminate' });
  });

  it('puts what moto does not model into the request: iops, throughput, tenancy, license', () => {
    const host = {
      tenancy: 'host' as const,
      hostResourceGroupArn: 'arn:aws:resource-groups:us-east-1:123456789012:group/mac',
      licenseConfigurationArn:
        'arn:aws:license-manager:us-east-1:123456789012:license-configuration:lic-0123abcd',
    };
    const config = baseConfig({
      disk: { sizeGb: 100, iops: 6000, throughputMiBps: 500 },
      dedicatedHost: host,
      instanceProfileArn: 'arn:aws:iam::123456789012:instance-profile/p',
      securityGroup: 'launch-wizard-1',
    });
    const input = buildRunInstancesInput(config, launchRequest(newOwner()), '/dev/sda1', 'tok');
    expect(input).toMatchObject({
      ClientToken: 'tok',
      SecurityGroups: ['launch-wizard-1'],
      IamInstanceProfile: { Arn: 'arn:aws:iam::123456789012:instance-profile/p' },
      BlockDeviceMappings: [
        {
          DeviceName: '/dev/sda1',
          Ebs: { VolumeSize: 100, VolumeType: 'gp3', Iops: 6000, Throughput: 500 },
        },
      ],
      Placement: { Tenancy: 'host', HostResourceGroupArn: host.hostResourceGroupArn },
      LicenseSpecifications: [{ LicenseConfigurationArn: host.licenseConfigurationArn }],
    });
    const plain = buildRunInstancesInput(baseConfig(), launchRequest(newOwner()), '/dev/sda1', 't');
    expect(plain.Placement).toBeUndefined();
    expect(plain.LicenseSpecifications).toBeUndefined();
    expect(plain.UserData).toBeUndefined();
    expect(plain.BlockDeviceMappings![0].Ebs).toMatchObject({ VolumeSize: 40, VolumeType: 'gp3' });
  });

  it('selects a security group by name and an instance profile by ARN', async () => {
    const sfx = uniqueSuffix();
    await ec2().send(new CreateSecurityGroupCommand({ GroupName: `lw-${sfx}`, Description: 'x' }));
    const arn = await createInstanceProfile(`by-arn-${sfx}`);
    const config = baseConfig({ securityGroup: `lw-${sfx}`, instanceProfileArn: arn });
    const launched = await motoProvider(config).launch(launchRequest(newOwner()));
    const raw = await describeRaw(launched.id);
    expect(raw.SecurityGroups).toEqual([expect.objectContaining({ GroupName: `lw-${sfx}` })]);
    expect(raw.IamInstanceProfile?.Arn).toBe(arn);
  });

  it('launches once per idempotency key, however long the key', async () => {
    const provider = motoProvider();
    const owner = newOwner();
    const request = launchRequest(owner);
    const first = await provider.launch(request);
    const again = await provider.launch(request);
    expect(again.id).toBe(first.id);

    const long = { ...launchRequest(owner), idempotencyKey: `taskrun/${'n'.repeat(120)}` };
    const a = await provider.launch(long);
    const b = await provider.launch(long);
    expect(b.id).toBe(a.id);
    expect(a.tags[LAUNCH_KEY_TAG_KEY]).toMatch(/^[0-9a-f]{64}$/);
    expect(await provider.countByOwner(owner)).toBe(2);
  });

  it("lists and counts only the owner's instances that are not terminated", async () => {
    const provider = motoProvider();
    const [mine, theirs] = [newOwner(), newOwner()];
    const kept = await provider.launch(launchRequest(mine));
    const gone = await provider.launch(launchRequest(mine));
    await provider.launch(launchRequest(theirs));
    await provider.terminate(gone.id);

    expect((await provider.listByOwner(mine)).map((i) => i.id)).toEqual([kept.id]);
    expect(await provider.countByOwner(mine)).toBe(1);
    expect(await provider.countByOwner(theirs)).toBe(1);
    expect(await provider.countByOwner(newOwner())).toBe(0);
    await expect(provider.listByOwner({ key: OWNER_TAG_KEY, value: '' })).rejects.toThrow(
      'owner tag value is empty',
    );
  });

  it('terminates idempotently and describes gone instances as terminated or unknown', async () => {
    const provider = motoProvider();
    const launched = await provider.launch(launchRequest(newOwner()));
    expect((await provider.describe(launched.id))?.state).toBe('running');
    await provider.terminate(launched.id);
    await provider.terminate(launched.id);
    expect((await provider.describe(launched.id))?.state).toBe('terminated');
    await provider.terminate('i-0123456789abcdef0');
    expect(await provider.describe('i-0123456789abcdef0')).toBeUndefined();
  });

  it('prefers the public DNS name, then the public IP; strict-public-address never uses the private IP', async () => {
    // moto gives an instance outside any subnet a public IP and DNS name, as EC2 does.
    const open = await motoProvider().launch(launchRequest(newOwner()));
    const raw = await describeRaw(open.id);
    expect(raw.PublicDnsName).toBeTruthy();
    expect(open.address).toBe(raw.PublicDnsName);

    const subnet = (
      await ec2().send(
        new CreateSubnetCommand({
          VpcId: (await ec2().send(new CreateVpcCommand({ CidrBlock: '10.92.0.0/16' }))).Vpc!.VpcId,
          CidrBlock: '10.92.1.0/24',
        }),
      )
    ).Subnet!;
    const strict = motoProvider(
      baseConfig({ subnetId: subnet.SubnetId, strictPublicAddress: true }),
    );
    const privateOnly = await strict.launch(launchRequest(newOwner()));
    expect((await describeRaw(privateOnly.id)).PrivateIpAddress).toMatch(/^10\.92\.1\./);
    expect(privateOnly.address).toBeUndefined();
    expect((await strict.describe(privateOnly.id))?.address).toBeUndefined();

    const addresses = { PublicIpAddress: '54.1.2.3', PrivateIpAddress: '10.0.0.5' };
    expect(addressOf(addresses, false)).toBe('54.1.2.3');
    expect(addressOf({ PrivateIpAddress: '10.0.0.5' }, false)).toBe('10.0.0.5');
    expect(addressOf({ PrivateIpAddress: '10.0.0.5', PublicDnsName: '' }, true)).toBeUndefined();
    expect(addressOf({ ...addresses, PublicDnsName: 'ec2-54-1-2-3.example' }, true)).toBe(
      'ec2-54-1-2-3.example',
    );
  });

  it('fails a launch with an unknown image for good, naming the key to fix', async () => {
    const owner = newOwner();
    const provider = motoProvider(baseConfig({ ami: 'ami-0123456789abcdef0' }));
    const failure = await expectFailure(provider.launch(launchRequest(owner)));
    expect(failure.nonRetryable).toBe(true);
    expect(failure.type).toBe('AwsConfig');
    expect(failure.message).toMatch(
      /^dynamic\.linux-arm64\.ami: image ami-0123456789abcdef0 does not exist in us-east-1/,
    );
    expect(await provider.countByOwner(owner)).toBe(0);
  });
});

/** Answers EC2 query requests by Action; records each request body. */
class FakeEc2 {
  readonly bodies: string[] = [];
  answer: (action: string) => { status: number; body: string } = () => ok('');
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        this.bodies.push(body);
        const credential = /Credential=([^/]+)\//.exec(req.headers.authorization ?? '')?.[1];
        const action = new URLSearchParams(body).get('Action') ?? '';
        const reply = this.answer(action);
        res.writeHead(reply.status, { 'content-type': 'text/xml' });
        res.end(reply.body.replace('$CREDENTIAL', credential ?? ''));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

const ok = (inner: string) => ({
  status: 200,
  body: `<Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">${inner}</Response>`,
});
const ec2Error = (status: number, code: string, message: string) => ({
  status,
  body:
    '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error>' +
    `<Code>${code}</Code><Message>${message}</Message></Error></Errors>` +
    '<RequestID>req-1</RequestID></Response>',
});

describe('AWS error classification (local EC2 double)', () => {
  const fake = new FakeEc2();
  let endpoint = '';
  // Fake values that look like credentials, to prove none reaches a message.
  const credentials = { accessKeyId: 'AKIAFAKEKEY0000001', secretAccessKey: 'fake/secret+key0' };
  const provider = () =>
    new AwsProvider({
      configName: 'linux-arm64',
      config: baseConfig(),
      credentials,
      credentialsSource: 'mpc/awsiam',
      endpoint,
    });
  /** Lookups succeed (nothing launched yet, image found); RunInstances answers `run`. */
  const launchAnswering = (run: { status: number; body: string }) => {
    fake.answer = (action) =>
      action === 'DescribeInstances'
        ? ok('<reservationSet/>')
        : action === 'DescribeImages'
          ? ok(`<imagesSet><item><imageId>${XVDA_AMI}</imageId></item></imagesSet>`)
          : run;
  };

  beforeAll(async () => {
    endpoint = await fake.start();
  });
  afterAll(() => fake.stop());

  it.each([
    [503, 'RequestLimitExceeded', 'AwsThrottled'],
    [400, 'Throttling', 'AwsThrottled'],
    [500, 'InternalError', 'AwsUnavailable'],
    [503, 'Unavailable', 'AwsUnavailable'],
    [400, 'InsufficientInstanceCapacity', 'AwsUnavailable'],
  ])('retries %i %s (%s)', async (status, code, type) => {
    launchAnswering(ec2Error(status, code, 'try again later'));
    const before = fake.bodies.length;
    const failure = await expectFailure(provider().launch(launchRequest(newOwner())));
    expect(failure).toMatchObject({ type, nonRetryable: false });
    expect(failure.message).toContain(`${code} ${status} on launch instance`);
    // One attempt per activity attempt: Temporal's retry policy does the back-off.
    expect(fake.bodies.slice(before).filter((b) => b.includes('Action=RunInstances'))).toHaveLength(
      1,
    );
  });

  it('retries a 5xx whose body is not even EC2 XML, and an unreachable endpoint', async () => {
    fake.answer = () => ({ status: 502, body: '<html>bad gateway</html>' });
    const failure = await expectFailure(provider().describe('i-0123456789abcdef0'));
    expect(failure).toMatchObject({ type: 'AwsUnavailable', nonRetryable: false });

    const closed = new AwsProvider({
      configName: 'linux-arm64',
      config: baseConfig(),
      credentials,
      endpoint: 'http://127.0.0.1:1',
    });
    const down = await expectFailure(closed.terminate('i-0123456789abcdef0'));
    expect(down).toMatchObject({ type: 'AwsUnavailable', nonRetryable: false });
    expect(down.message).toContain('cannot reach EC2');
  });

  it.each([
    [
      401,
      'AuthFailure',
      'AwsCredentials',
      'dynamic.linux-arm64.aws-secret: AWS rejected the credentials in Secret mpc/awsiam',
    ],
    [
      403,
      'UnauthorizedOperation',
      'AwsCredentials',
      'dynamic.linux-arm64.aws-secret: the credentials in Secret mpc/awsiam lack',
    ],
    [
      400,
      'InvalidKeyPair.NotFound',
      'AwsConfig',
      'dynamic.linux-arm64.key-name: key pair "builder" does not exist in us-east-1',
    ],
    [
      400,
      'InvalidGroup.NotFound',
      'AwsConfig',
      'dynamic.linux-arm64.security-group-id: EC2 rejected',
    ],
    [400, 'InvalidSubnetID.NotFound', 'AwsConfig', 'dynamic.linux-arm64.subnet-id: EC2 rejected'],
    [400, 'VcpuLimitExceeded', 'AwsQuota', 'dynamic.linux-arm64.max-instances: the AWS account'],
    [400, 'IdempotentParameterMismatch', 'AwsIdempotency', 'this launch key already launched'],
  ])('does not retry %i %s', async (status, code, type, message) => {
    launchAnswering(ec2Error(status, code, 'denied for $CREDENTIAL'));
    const failure = await expectFailure(provider().launch(launchRequest(newOwner())));
    expect(failure).toMatchObject({ type, nonRetryable: true });
    expect(failure.message.startsWith(message)).toBe(true);
    expect(failure.message).toContain(`(${code} ${status} on launch instance`);
    expect(failure.message).toContain('[redacted]');
    expect(JSON.stringify(failure)).not.toContain(credentials.accessKeyId);
    expect(failure.message).not.toContain(credentials.secretAccessKey);
  });

  it('names the configured key an InvalidParameterValue points at', async () => {
    launchAnswering(
      ec2Error(
        400,
        'InvalidParameterValue',
        'Value (x9.huge) for parameter instanceType is invalid.',
      ),
    );
    const failure = await expectFailure(provider().launch(launchRequest(newOwner())));
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/^dynamic\.linux-arm64\.instance-type: EC2 rejected/);
  });

  it('falls back to /dev/sda1 when the credentials may not call DescribeImages, as the original never did', async () => {
    fake.answer = (action) =>
      action === 'DescribeImages'
        ? ec2Error(403, 'UnauthorizedOperation', 'not allowed')
        : action === 'DescribeInstances'
          ? ok('<reservationSet/>')
          : ok(
              '<reservationId>r-1</reservationId><instancesSet><item><instanceId>i-0abc</instanceId>' +
                '<instanceState><code>0</code><name>pending</name></instanceState></item></instancesSet>',
            );
    const launched = await provider().launch(launchRequest(newOwner()));
    expect(launched).toMatchObject({ id: 'i-0abc', state: 'pending' });
    const run = new URLSearchParams(fake.bodies.find((b) => b.includes('Action=RunInstances'))!);
    expect(run.get('BlockDeviceMapping.1.DeviceName')).toBe('/dev/sda1');
    expect(run.get('ClientToken')).toMatch(/^taskrun\/builds\//);
  });

  it('classifies without a platform context too, and passes Temporal failures through', () => {
    const plain = classifyAwsError(
      Object.assign(new Error('Request limit exceeded.'), {
        name: 'RequestLimitExceeded',
        $metadata: { httpStatusCode: 503 },
      }),
      'count instances',
    );
    expect(plain).toMatchObject({ type: 'AwsThrottled', nonRetryable: false });
    const own = ApplicationFailure.nonRetryable('x', 'Mine');
    expect(classifyAwsError(own, 'anything')).toBe(own);
  });
});

describe('AWS credentials from a Secret', () => {
  const k = kube();
  const namespace = `aws-creds-${uniqueSuffix()}`;
  const secret = (name: string, data: Record<string, string>) =>
    k.core.createNamespacedSecret({ namespace, body: { metadata: { name }, stringData: data } });

  beforeAll(async () => {
    await k.core.createNamespace({ body: { metadata: { name: namespace } } });
    await secret('full', {
      'access-key-id': 'AKIAFAKEKEY0000002\n',
      'secret-access-key': 'fake-secret',
      'session-token': 'fake-session',
    });
    await secret('basic', { 'access-key-id': 'AKIAFAKEKEY0000003', 'secret-access-key': 's3' });
    await secret('partial', { 'access-key-id': 'AKIAFAKEKEY0000004' });
  });
  afterAll(async () => {
    await k.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  it('reads the original keys, trimming a stored trailing newline', async () => {
    expect(await awsCredentialsFromSecret(k.core, namespace, 'full')).toEqual({
      accessKeyId: 'AKIAFAKEKEY0000002',
      secretAccessKey: 'fake-secret',
      sessionToken: 'fake-session',
    });
    expect(await awsCredentialsFromSecret(k.core, namespace, 'basic')).toEqual({
      accessKeyId: 'AKIAFAKEKEY0000003',
      secretAccessKey: 's3',
    });
  });

  it('fails for good, naming the Secret and the missing key, never a value', async () => {
    const key = 'dynamic.linux-arm64.aws-secret';
    const partial = await expectFailure(
      awsCredentialsFromSecret(k.core, namespace, 'partial', key),
    );
    expect(partial).toMatchObject({ nonRetryable: true, type: 'AwsCredentialsMissing' });
    expect(partial.message).toBe(
      `Secret ${namespace}/partial has no key secret-access-key: it needs the AWS keys ` +
        `access-key-id and secret-access-key (optional session-token), or correct ${key} in host-config`,
    );
    expect(partial.message).not.toContain('AKIAFAKEKEY0000004');
    const missing = await expectFailure(awsCredentialsFromSecret(k.core, namespace, 'nope'));
    expect(missing.nonRetryable).toBe(true);
    expect(missing.message).toMatch(new RegExp(`^Secret ${namespace}/nope not found: create it`));
  });
});
