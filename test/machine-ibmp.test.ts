// A Cluster API Machine with a HostflowMachine on IBM Power VS, under the real Cluster API core, end to end: the Power VS double, whose instances boot
// into real sshd hosts, with real bridge and worker processes. A file of its own, since a worker
// talks to one IBM IAM endpoint and machine-cloud.test.ts uses IBM VPC's. The bootstrap data
// registers the Node (test/support/node-join.ts stands in for kubeadm join and a kubelet).
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { parsePowerCrn } from '../platform-config/ibm-config.js';
import { tearDown, type EngineProcess } from './support/engine.js';
import { uniqueSuffix } from './support/env.js';
import {
  machinePlatformKeys,
  startMachineEngine,
  storeCloudSecrets,
  type Machines,
} from './support/machines.js';
import type { NodeJoiner } from './support/node-join.js';
import { createScope, type TestScope } from './support/scope.js';
import { startVmCloud, type VmCloud } from './support/vm-cloud.js';
import { waitFor } from '../local-stack/process.js';

const sfx = uniqueSuffix();
const IBMP = `linux/mibmp-${sfx}`;
const tag = `hfmibmp-${sfx}`;
let scope: TestScope;
let ibmp: VmCloud;
let worker: EngineProcess;
let bridge: EngineProcess;
let machines: Machines;
let joiner: NodeJoiner;

beforeAll(async () => {
  scope = await createScope('mibmp');
  ibmp = await startVmCloud('ibmp', {
    name: `mibmp-${sfx}`,
    subnetCidr: '10.231.240.0/20',
    bootDelayMs: 1000,
  });
  await storeCloudSecrets(scope, ibmp);
  await scope.setHostConfig({
    'dynamic-platforms': IBMP,
    ...machinePlatformKeys(ibmp, IBMP, tag),
  });
  ({ worker, bridge, machines, joiner } = await startMachineEngine(scope, ibmp.workerEnv));
}, 180_000);

afterAll(async () => {
  machines?.stopWatches();
  await tearDown([bridge, worker], joiner);
  await ibmp?.stop();
  await scope?.dispose();
});

it('runs on a Power VS VM named ibmpowervs://<zone>/<id>, terminated on delete', async () => {
  const { running, phases } = await machines.createRunning('p1', IBMP, joiner.script());
  expect(phases.at(-1)).toBe('Running');
  const [id] = await ibmp.liveInstances(tag);
  const crn = parsePowerCrn(ibmp.providerKeys.crn!);
  expect(typeof crn).toBe('object');
  expect(running.spec.providerID).toBe(`ibmpowervs://${(crn as { zone: string }).zone}/${id}`);
  expect(running.status?.addresses?.map((a) => a.type)).toContain('InternalIP');
  await machines.delete('p1');
  await machines.gone('p1');
  await waitFor(
    `no ${tag} VM left`,
    async () => ((await ibmp.liveInstances(tag)).length ? undefined : true),
    {
      timeoutMs: 60_000,
    },
  );
}, 180_000);
