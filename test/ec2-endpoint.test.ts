// moto's EC2 server answers the project's own AWS client: the endpoint later cloud tests use.
import { describe, expect, it } from '@jest/globals';
import {
  DescribeInstancesCommand,
  DescribeRegionsCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { testEnv } from './support/env.js';

// moto accepts any credentials; these are not secrets.
const client = () =>
  new EC2Client({
    endpoint: testEnv('motoEndpoint'),
    region: 'us-east-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  });

describe('EC2 endpoint (moto)', () => {
  it('lists regions and runs, tags, describes and terminates an instance', async () => {
    const ec2 = client();
    const regions = await ec2.send(new DescribeRegionsCommand({}));
    expect(regions.Regions?.map((r) => r.RegionName)).toContain('us-east-1');

    const run = await ec2.send(
      new RunInstancesCommand({
        ImageId: 'ami-12c6146b',
        InstanceType: 't4g.medium',
        MinCount: 1,
        MaxCount: 1,
        TagSpecifications: [
          {
            ResourceType: 'instance',
            Tags: [{ Key: 'multi-platform-instance', Value: 'endpoint-test' }],
          },
        ],
      }),
    );
    const id = run.Instances?.[0]?.InstanceId;
    expect(id).toMatch(/^i-/);

    const byTag = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [{ Name: 'tag:multi-platform-instance', Values: ['endpoint-test'] }],
      }),
    );
    expect(byTag.Reservations?.flatMap((r) => r.Instances ?? []).map((i) => i.InstanceId)).toEqual([
      id,
    ]);

    const terminated = await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id!] }));
    expect(terminated.TerminatingInstances?.[0]?.CurrentState?.Name).toMatch(
      /shutting-down|terminated/,
    );
  });
});
