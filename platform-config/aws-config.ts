// AWS keys of a dynamic platform (`dynamic.<cfg>.*` with `type: aws`, docs/architecture.md, "host-config"), as
// the original's pkg/aws/ec2.go reads them, but checked: a value the original silently replaced
// with a default (a bad `disk`, `iops`, …) is reported here instead.
import type { CloudProviderSpec } from './cloud-provider-spec.js';
import { configFields, type ConfigProblemSink, type ConfigRead } from './config-fields.js';

export interface AwsConfig {
  region: string;
  ami: string;
  instanceType: string;
  /** EC2 key pair whose public key the image installs for the admin user. */
  keyName: string;
  /** Secret in the engine namespace: `access-key-id`, `secret-access-key`, `session-token`?. */
  awsSecret: string;
  securityGroup?: string;
  securityGroupId?: string;
  subnetId?: string;
  instanceProfileName?: string;
  instanceProfileArn?: string;
  /** Never use the private address, only the public DNS name or IP. */
  strictPublicAddress: boolean;
  /** gp3 root volume. */
  disk: { sizeGb: number; iops?: number; throughputMiBps?: number };
  /** Raw user data; base64-encoded at launch. */
  userData?: string;
  /** Dedicated-host placement (e.g. macOS): all three keys or none. */
  dedicatedHost?: {
    tenancy: 'host';
    hostResourceGroupArn: string;
    licenseConfigurationArn: string;
  };
}

export const AWS_DEFAULT_DISK_GB = 40;
/** EC2's limit on user data, before base64 encoding. */
export const AWS_MAX_USER_DATA_BYTES = 16_384;

const ID = (prefix: string) => new RegExp(`^${prefix}-[0-9a-f]{8}([0-9a-f]{9})?$`);
const ARN = (service: string, resource: string) =>
  new RegExp(`^arn:aws[a-z-]*:${service}:[a-z0-9-]*:\\d{12}:${resource}$`);
const PRINTABLE_NAME = /^[\x21-\x7e]([\x20-\x7e]{0,253}[\x21-\x7e])?$/;

export function parseAwsConfig(
  read: ConfigRead,
  problem: ConfigProblemSink,
): AwsConfig | undefined {
  let failed = false;
  const report: ConfigProblemSink = (key, reason) => {
    failed = true;
    problem(key, reason);
  };
  const f = configFields(read, report);
  const printableName = (key: string, what: string, required?: string) =>
    f.text(key, {
      required,
      valid: PRINTABLE_NAME,
      expected: `${what} (printable ASCII, at most 255 characters)`,
    });

  const config = {
    region: f.text('region', {
      required: 'the AWS region to launch in (for example us-east-1)',
      valid: /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/,
      expected: 'an AWS region such as us-east-1',
    }),
    ami: f.text('ami', {
      required: 'the image to launch (for example ami-03d6a5256a46c9feb)',
      valid: ID('ami'),
      expected: 'an image id such as ami-03d6a5256a46c9feb',
    }),
    instanceType: f.text('instance-type', {
      required: 'the EC2 instance type (for example t4g.medium)',
      valid: /^[a-z][a-z0-9-]*\.[a-z0-9-]+$/,
      expected: 'an EC2 instance type such as t4g.medium',
    }),
    keyName: printableName('key-name', 'a key pair name', 'the EC2 key pair installed on the VMs'),
    awsSecret: f.secretName(
      'aws-secret',
      'the Secret in the engine namespace with the AWS keys access-key-id and secret-access-key',
    ),
    securityGroup: printableName('security-group', 'a security group name'),
    securityGroupId: f.text('security-group-id', {
      valid: ID('sg'),
      expected: 'a security group id such as sg-05bc8dd0b52158567',
    }),
    subnetId: f.text('subnet-id', {
      valid: ID('subnet'),
      expected: 'a subnet id such as subnet-030738beb81d3863a',
    }),
    instanceProfileName: f.text('instance-profile-name', {
      valid: /^[\w+=,.@-]{1,128}$/,
      expected: 'an IAM instance profile name (letters, digits and "+=,.@_-")',
    }),
    instanceProfileArn: f.text('instance-profile-arn', {
      valid: ARN('iam', 'instance-profile/[\\w+=,.@/-]+'),
      expected: 'an ARN such as arn:aws:iam::123456789012:instance-profile/builder',
    }),
    strictPublicAddress: f.flag('strict-public-address'),
    disk: {
      sizeGb: f.integer('disk', {
        min: 1,
        what: 'GB of the gp3 root volume',
        default: AWS_DEFAULT_DISK_GB,
      }),
      iops: f.integer('iops', {
        min: 3000,
        what: 'provisioned IOPS of the gp3 root volume',
        optional: true,
      }),
      throughputMiBps: f.integer('throughput', {
        min: 125,
        what: 'MiB/s of the gp3 root volume',
        optional: true,
      }),
    },
    userData: userData(read('user-data'), report),
    dedicatedHost: dedicatedHost(f, report),
  };
  if (failed) return undefined;
  // Drop the optional keys that are not set, so the config reads (and compares) as written.
  return JSON.parse(JSON.stringify(config)) as AwsConfig;
}

function userData(raw: string | undefined, problem: ConfigProblemSink): string | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const bytes = new TextEncoder().encode(raw).length; // no Buffer: workflows parse config too
  if (bytes > AWS_MAX_USER_DATA_BYTES) {
    problem('user-data', `is ${bytes} bytes; AWS accepts at most ${AWS_MAX_USER_DATA_BYTES}`);
    return undefined;
  }
  return raw;
}

function dedicatedHost(
  f: ReturnType<typeof configFields>,
  problem: ConfigProblemSink,
): AwsConfig['dedicatedHost'] {
  const tenancy = f.text('tenancy', {
    valid: /^host$/,
    expected: 'host (a host resource group needs dedicated-host tenancy)',
  });
  const hostResourceGroupArn = f.text('host-resource-group-arn', {
    valid: ARN('resource-groups', 'group/[\\w.-]{1,128}'),
    expected: 'an ARN such as arn:aws:resource-groups:us-east-1:123456789012:group/mac-hosts',
  });
  const licenseConfigurationArn = f.text('license-configuration-arn', {
    valid: ARN('license-manager', 'license-configuration:lic-[0-9a-f]+'),
    expected:
      'an ARN such as arn:aws:license-manager:us-east-1:123456789012:license-configuration:lic-0123abcd',
  });
  const keys = ['tenancy', 'host-resource-group-arn', 'license-configuration-arn'];
  const set = keys.filter((key) => f.value(key) !== undefined);
  if (set.length > 0 && set.length < keys.length) {
    for (const key of keys.filter((k) => !set.includes(k))) {
      problem(
        key,
        `required because ${set.join(' and ')} ${set.length > 1 ? 'are' : 'is'} set: ` +
          'tenancy, host-resource-group-arn and license-configuration-arn go together (all three or none)',
      );
    }
    return undefined;
  }
  if (!tenancy || !hostResourceGroupArn || !licenseConfigurationArn) return undefined;
  return { tenancy: 'host', hostResourceGroupArn, licenseConfigurationArn };
}

/** `type: aws` (platform-config/cloud-providers.ts); the adapter is activities/cloud/aws.ts. */
export const AWS_PROVIDER: CloudProviderSpec<AwsConfig> = {
  cloudName: 'AWS',
  parse: parseAwsConfig,
  /** Admin user of the AMIs the original launched (its pkg/aws SshUser). */
  adminUser: 'ec2-user',
  credentialsSecret: (config) => config.awsSecret,
  userData: (config) => config.userData,
  maxUserDataBytes: AWS_MAX_USER_DATA_BYTES,
  providerIdPrefix: 'aws:///',
};
