// Dynamic and dynamic-pool platforms on AWS, end to end against moto's EC2, whose instances
// become real sshd hosts after a boot delay (local-stack/ec2-vms.ts).
import { describeCloudPlatform } from './support/cloud-scenarios.js';

describeCloudPlatform({ kind: 'aws', subnetCidr: '10.231.144.0/21' });
