// Dynamic and dynamic-pool platforms on IBM Cloud VPC (System Z), end to end against the IBM
// double, whose instances become real sshd hosts (root login, as on IBM images) when booted.
import { describeCloudPlatform } from './support/cloud-scenarios.js';

describeCloudPlatform({ kind: 'ibmz', subnetCidr: '10.231.160.0/20' });
