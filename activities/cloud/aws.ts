// EC2 behind the CloudProvider shape, configured by a platform's `dynamic.<cfg>.*` AWS keys.
// Launch is idempotent twice over: EC2's ClientToken, and a launch-key tag looked up first (moto,
// the local EC2, ignores ClientToken). Errors become Temporal failures: throttling, 5xx and
// network errors retry; bad config and rejected credentials are non-retryable and name the key.
import { createHash } from 'node:crypto';
import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
  paginateDescribeInstances,
  type DescribeInstancesCommandInput,
  type Image,
  type Instance as Ec2Instance,
  type RunInstancesCommandInput,
  type _InstanceType,
} from '@aws-sdk/client-ec2';
import { ApplicationFailure } from '@temporalio/common';
import { AWS_PROVIDER, type AwsConfig } from '../../platform-config/aws-config.js';
import { printable } from '../../platform-config/platform.js';
import type { AwsCredentials } from './aws-credentials.js';
import type { CloudProvider, Instance, InstanceState, LaunchRequest } from './provider.js';

/** Tag holding the launch's ClientToken, so a retried launch finds its instance. */
export const LAUNCH_KEY_TAG_KEY = 'hostflow.dev/launch-key';
/** Set by the original controller on every VM it launched; kept for its dashboards and tools. */
export const MANAGED_TAG_KEY = 'MultiPlatformManaged';
/** Used when DescribeImages names no root device (or may not be called); the original's choice. */
export const FALLBACK_ROOT_DEVICE = '/dev/sda1';

export interface AwsProviderOptions {
  /** `<cfg>` of the platform's keys (`linux/arm64` → `linux-arm64`), named in error messages. */
  configName: string;
  config: AwsConfig;
  credentials: AwsCredentials;
  /** Where the credentials came from, named in auth errors: `<namespace>/<secret>`. */
  credentialsSource?: string;
  /** EC2 endpoint override: moto in tests and in the local stack. */
  endpoint?: string;
  /** SDK attempts per call. Default 1: Temporal's retry policy alone retries, visibly. */
  maxAttempts?: number;
}

export type AwsErrorContext = Pick<
  AwsProviderOptions,
  'configName' | 'config' | 'credentials' | 'credentialsSource'
>;

export class AwsProvider implements CloudProvider {
  readonly kind = 'aws' as const;
  readonly sshUser = AWS_PROVIDER.adminUser;
  private readonly ec2: EC2Client;

  constructor(private readonly options: AwsProviderOptions) {
    this.ec2 = new EC2Client({
      region: options.config.region,
      endpoint: options.endpoint,
      credentials: options.credentials,
      maxAttempts: options.maxAttempts ?? 1,
    });
  }

  /**
   * A retried launch (same idempotency key) returns the instance the first one created, even
   * if it has terminated since: a replacement needs a new key.
   */
  async launch(request: LaunchRequest): Promise<Instance> {
    if (!request.owner.value) throw ownerMissing();
    const token = clientToken(request.idempotencyKey);
    const [existing] = await this.list(`find launch ${token}`, [
      tagFilter(LAUNCH_KEY_TAG_KEY, token),
    ]);
    if (existing) return existing;
    const rootDevice = await this.rootDeviceName();
    const input = buildRunInstancesInput(this.options.config, request, rootDevice, token);
    const out = await this.call(`launch instance ${request.name}`, () =>
      this.ec2.send(new RunInstancesCommand(input)),
    );
    const launched = out.Instances?.[0];
    if (!launched?.InstanceId) {
      throw ApplicationFailure.retryable(
        `EC2 launched no instance for ${request.name}`,
        'AwsError',
      );
    }
    return this.toInstance(launched);
  }

  /** undefined for an id EC2 does not know, which EC2 may briefly say of a just-launched one. */
  async describe(id: string): Promise<Instance | undefined> {
    try {
      const out = await this.ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
      const found = out.Reservations?.flatMap((r) => r.Instances ?? [])[0];
      return found ? this.toInstance(found) : undefined;
    } catch (err) {
      if (awsCode(err) === 'InvalidInstanceID.NotFound') return undefined;
      throw classifyAwsError(err, `describe instance ${id}`, this.options);
    }
  }

  async listByOwner(owner: { key: string; value: string }): Promise<Instance[]> {
    if (!owner.value) throw ownerMissing();
    return this.list(`list instances tagged ${owner.key}=${owner.value}`, [
      tagFilter(owner.key, owner.value),
      { Name: 'instance-state-name', Values: ['pending', 'running', 'stopping', 'stopped'] },
    ]);
  }

  async countByOwner(owner: { key: string; value: string }): Promise<number> {
    return (await this.listByOwner(owner)).length;
  }

  async terminate(id: string): Promise<void> {
    try {
      await this.ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    } catch (err) {
      if (awsCode(err) === 'InvalidInstanceID.NotFound') return;
      throw classifyAwsError(err, `terminate instance ${id}`, this.options);
    }
  }

  /** Releases the client's sockets; call it when done with the provider. */
  destroy(): void {
    this.ec2.destroy();
  }

  private async list(action: string, filters: DescribeInstancesCommandInput['Filters']) {
    const found: Instance[] = [];
    await this.call(action, async () => {
      const pages = paginateDescribeInstances(
        { client: this.ec2, pageSize: 1000 },
        { Filters: filters },
      );
      for await (const page of pages) {
        for (const reservation of page.Reservations ?? []) {
          for (const instance of reservation.Instances ?? []) found.push(this.toInstance(instance));
        }
      }
    });
    return found;
  }

  private async rootDeviceName(): Promise<string> {
    const { ami } = this.options.config;
    const action = `describe image ${ami}`;
    let images: Image[] | undefined;
    try {
      images = (await this.ec2.send(new DescribeImagesCommand({ ImageIds: [ami] }))).Images;
    } catch (err) {
      // The original never called DescribeImages: its credentials may not be allowed to.
      if (awsCode(err) === 'UnauthorizedOperation') return FALLBACK_ROOT_DEVICE;
      throw classifyAwsError(err, action, this.options);
    }
    if (!images?.length) {
      const gone = Object.assign(new Error(`no image ${ami}`), { name: 'InvalidAMIID.NotFound' });
      throw classifyAwsError(gone, action, this.options);
    }
    return images[0].RootDeviceName || FALLBACK_ROOT_DEVICE;
  }

  private async call<T>(action: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw classifyAwsError(err, action, this.options);
    }
  }

  private toInstance(instance: Ec2Instance): Instance {
    const tags = Object.fromEntries((instance.Tags ?? []).map((t) => [t.Key ?? '', t.Value ?? '']));
    return {
      id: instance.InstanceId ?? '',
      state: stateOf(instance.State?.Name),
      address: addressOf(instance, this.options.config.strictPublicAddress),
      launchedAt: instance.LaunchTime?.toISOString(),
      ...(instance.Placement?.AvailabilityZone
        ? { zone: instance.Placement.AvailabilityZone }
        : {}),
      tags,
      ...(tags[LAUNCH_KEY_TAG_KEY] ? { launchRef: tags[LAUNCH_KEY_TAG_KEY] } : {}),
    };
  }

  launchRef(idempotencyKey: string): string {
    return clientToken(idempotencyKey);
  }
}

/** The RunInstances request for one launch: every configured key applied. */
export function buildRunInstancesInput(
  config: AwsConfig,
  request: LaunchRequest,
  rootDeviceName: string,
  token: string,
): RunInstancesCommandInput {
  const tags = Object.entries({
    ...request.tags,
    Name: request.name,
    [MANAGED_TAG_KEY]: 'true',
    [request.owner.key]: request.owner.value,
    [LAUNCH_KEY_TAG_KEY]: token,
  }).map(([Key, Value]) => ({ Key, Value }));
  // With both set (as the original allowed), the ARN names the profile unambiguously.
  const profile = config.instanceProfileArn
    ? { Arn: config.instanceProfileArn }
    : config.instanceProfileName
      ? { Name: config.instanceProfileName }
      : undefined;
  const host = config.dedicatedHost;
  return {
    ClientToken: token,
    ImageId: config.ami,
    InstanceType: config.instanceType as _InstanceType,
    KeyName: config.keyName,
    MinCount: 1,
    MaxCount: 1,
    EbsOptimized: true,
    // A VM that shuts itself down is gone, not a stopped instance nobody terminates.
    InstanceInitiatedShutdownBehavior: 'terminate',
    SecurityGroups: config.securityGroup ? [config.securityGroup] : undefined,
    SecurityGroupIds: config.securityGroupId ? [config.securityGroupId] : undefined,
    SubnetId: config.subnetId,
    IamInstanceProfile: profile,
    UserData:
      (request.userData ?? config.userData)
        ? Buffer.from(request.userData ?? config.userData ?? '', 'utf8').toString('base64')
        : undefined,
    BlockDeviceMappings: [
      {
        DeviceName: rootDeviceName,
        Ebs: {
          VolumeSize: config.disk.sizeGb,
          VolumeType: 'gp3',
          Iops: config.disk.iops,
          Throughput: config.disk.throughputMiBps,
          DeleteOnTermination: true,
        },
      },
    ],
    Placement: host
      ? { Tenancy: host.tenancy, HostResourceGroupArn: host.hostResourceGroupArn }
      : undefined,
    LicenseSpecifications: host
      ? [{ LicenseConfigurationArn: host.licenseConfigurationArn }]
      : undefined,
    TagSpecifications: [
      { ResourceType: 'instance', Tags: tags },
      { ResourceType: 'volume', Tags: tags },
    ],
  };
}

/** EC2's ClientToken: at most 64 ASCII characters, so longer keys are hashed. */
export function clientToken(idempotencyKey: string): string {
  return /^[\x21-\x7e]{1,64}$/.test(idempotencyKey)
    ? idempotencyKey
    : createHash('sha256').update(idempotencyKey).digest('hex');
}

/**
 * The original's priority (konflux-ci/multi-platform-controller pkg/aws/ec2_helpers.go,
 * validateIPAddress): the public DNS name, then the public IP, then, unless
 * strict-public-address, the private IP. (From inside the VPC, EC2's public DNS name resolves
 * to the private address.)
 */
export function addressOf(instance: Ec2Instance, strictPublicAddress: boolean): string | undefined {
  return (
    instance.PublicDnsName ||
    instance.PublicIpAddress ||
    (strictPublicAddress ? undefined : instance.PrivateIpAddress) ||
    undefined
  );
}

function stateOf(name: string | undefined): InstanceState {
  switch (name) {
    case 'pending':
    case 'running':
    case 'stopping':
    case 'stopped':
    case 'terminated':
      return name;
    case 'shutting-down': // irreversible: on its way to terminated
      return 'terminated';
    default:
      return 'unknown';
  }
}

const tagFilter = (key: string, value: string) => ({ Name: `tag:${key}`, Values: [value] });

const ownerMissing = () =>
  ApplicationFailure.nonRetryable('the owner tag value is empty: set instance-tag', 'AwsConfig');

export function awsCode(err: unknown): string | undefined {
  const e = err as { Code?: unknown; name?: unknown } | undefined;
  const code = e?.Code ?? e?.name;
  return typeof code === 'string' ? code : undefined;
}

const codes = (list: string) => new Set(list.split(' '));
const THROTTLING = codes(
  'RequestLimitExceeded Throttling ThrottlingException RequestThrottled RequestThrottledException TooManyRequestsException SlowDown',
);
const TRANSIENT = codes(
  'InternalError InternalFailure ServiceUnavailable Unavailable RequestTimeout RequestExpired InsufficientInstanceCapacity InsufficientHostCapacity InsufficientCapacity IncorrectState IncorrectInstanceState',
);
const CREDENTIALS = codes(
  'AuthFailure InvalidClientTokenId SignatureDoesNotMatch UnrecognizedClientException ExpiredToken ExpiredTokenException OptInRequired PendingVerification Blocked',
);
const PERMISSION = codes('UnauthorizedOperation AccessDenied AccessDeniedException');
const QUOTA = codes('VcpuLimitExceeded InstanceLimitExceeded MaxSpotInstanceCountExceeded');
// Matched on the message too: the SDK wraps errors from another realm (e.g. jest's VM) in a
// plain Error whose message alone still says what happened.
const NETWORK =
  /\b(ECONN\w+|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|socket hang up)\b/;

/**
 * An EC2 error as a Temporal failure. Never carries the credentials: they are scrubbed from
 * the AWS message, and the SDK error (with its raw response) is not attached as the cause.
 */
export function classifyAwsError(
  err: unknown,
  action: string,
  context?: AwsErrorContext,
): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const e = err as { message?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const code = awsCode(err) ?? 'Error';
  const status = e?.$metadata?.httpStatusCode;
  const message = e?.message ?? String(err);
  const v = verdict(code, status, e?.code, message, context);
  // Keys are the platform's own, except the global additional-instance-tags.
  const key =
    v.key && context && v.key !== 'additional-instance-tags'
      ? `dynamic.${context.configName}.${v.key}`
      : v.key;
  const aws = `${code}${status ? ` ${status}` : ''} on ${action}: ${scrub(message, context)}`;
  return ApplicationFailure.create({
    message: `${key ? `${key}: ` : ''}${v.say} (${aws})`,
    type: v.type,
    nonRetryable: !v.retry,
    details: [{ code, status, key }],
  });
}

interface Verdict {
  type: string;
  retry: boolean;
  say: string;
  /** The host-config key to fix, without the `dynamic.<cfg>.` prefix. */
  key?: string;
}

function verdict(
  code: string,
  status: number | undefined,
  errno: string | undefined,
  message: string,
  context: AwsErrorContext | undefined,
): Verdict {
  const config = context?.config;
  const where = config ? ` in ${config.region}` : '';
  const secret = context?.credentialsSource ? `Secret ${context.credentialsSource}` : 'the Secret';
  const fix = (key: string, say: string): Verdict => ({
    type: 'AwsConfig',
    retry: false,
    key,
    say,
  });
  if (THROTTLING.has(code) || status === 429) {
    return { type: 'AwsThrottled', retry: true, say: 'EC2 is throttling requests' };
  }
  if (TRANSIENT.has(code) || (status ?? 0) >= 500) {
    return { type: 'AwsUnavailable', retry: true, say: 'EC2 is unavailable' };
  }
  const network = NETWORK.test(`${errno ?? ''} ${message}`) || /timeout|network/i.test(code);
  if (status === undefined && network) {
    return { type: 'AwsUnavailable', retry: true, say: 'cannot reach EC2' };
  }
  if (CREDENTIALS.has(code) || PERMISSION.has(code)) {
    const say = PERMISSION.has(code)
      ? `the credentials in ${secret} lack the EC2 permission for this; grant it`
      : `AWS rejected the credentials in ${secret}; store a valid access key there`;
    return { type: 'AwsCredentials', retry: false, key: 'aws-secret', say };
  }
  if (QUOTA.has(code)) {
    const say = `the AWS account's instance quota${where} is used up; lower max-instances or raise the quota`;
    return { type: 'AwsQuota', retry: false, key: 'max-instances', say };
  }
  if (code === 'IdempotentParameterMismatch' || code === 'IdempotentInstanceTerminated') {
    const say =
      'this launch key already launched a different or terminated instance; use a new key';
    return { type: 'AwsIdempotency', retry: false, say };
  }
  if (code.startsWith('InvalidAMIID.')) {
    return fix('ami', `image ${config?.ami ?? ''} does not exist${where} or is not usable`);
  }
  if (code.startsWith('InvalidKeyPair.')) {
    return fix('key-name', `key pair "${config?.keyName ?? ''}" does not exist${where}`);
  }
  const key = config && keyNamedBy(code, message, config);
  if (key) return fix(key, `EC2 rejected the configured value${where}`);
  return { type: 'AwsError', retry: status === undefined, say: 'EC2 refused the request' };
}

/** The host-config key an EC2 client error points at, from its code or message. */
function keyNamedBy(code: string, message: string, config: AwsConfig): string | undefined {
  const text = `${code} ${message}`;
  const either = (a: string, b: string, aSet: unknown) => (aSet ? a : b);
  if (/InvalidGroup|security ?group/i.test(text)) {
    return message.includes(config.securityGroupId ?? '\0') || !config.securityGroup
      ? 'security-group-id'
      : 'security-group';
  }
  if (/InvalidSubnet|subnet|vpc/i.test(text)) return 'subnet-id';
  if (/iops/i.test(text)) return 'iops';
  if (/throughput/i.test(text)) return 'throughput';
  if (/InvalidBlockDeviceMapping|volume|snapshot|block ?device/i.test(text)) return 'disk';
  if (/NoSuchEntity|instance ?profile/i.test(text)) {
    return either('instance-profile-arn', 'instance-profile-name', config.instanceProfileArn);
  }
  if (/user ?data/i.test(text)) return 'user-data';
  if (/license/i.test(text)) return 'license-configuration-arn';
  if (/tenancy|host ?resource ?group|placement/i.test(text)) return 'tenancy';
  if (/instance ?type/i.test(text)) return 'instance-type';
  if (/tag/i.test(text)) return 'additional-instance-tags';
  return undefined;
}

function scrub(message: string, context?: AwsErrorContext): string {
  let text = message;
  const creds = context?.credentials;
  for (const secret of [creds?.accessKeyId, creds?.secretAccessKey, creds?.sessionToken]) {
    if (secret) text = text.split(secret).join('[redacted]');
  }
  return printable(text, 400);
}
