// Dynamic and dynamic-pool platforms on IBM Power VS, end to end against the IBM double, whose
// instances become real sshd hosts (root login, as on IBM images) when booted.
import { describeCloudPlatform } from './support/cloud-scenarios.js';

describeCloudPlatform({ kind: 'ibmp', subnetCidr: '10.231.176.0/20' });
