// The chaos suite, small: TaskRuns on local, static, dynamic and pool platforms while the worker,
// the bridge and the OTP service are killed with SIGKILL at random points (each comes back, as
// under `hostflow start` or a Deployment), and builds complete meanwhile. Every build is served
// (capacity exists for all, in turn), and nothing is left behind. bench/chaos.ts runs 200.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { runChaos } from '../bench/chaos-run.js';
import { startChaosStack, type ChaosStack } from '../bench/chaos-stack.js';
import { testEnv } from './support/env.js';
import { createScope, type TestScope } from './support/scope.js';

let scope: TestScope;
let stack: ChaosStack;

beforeAll(async () => {
  scope = await createScope('chaos');
  stack = await startChaosStack({
    kubeconfigPath: testEnv('kubeconfig'),
    temporalAddress: testEnv('temporalAddress'),
    temporalNamespace: testEnv('temporalNamespace'),
    motoEndpoint: testEnv('motoEndpoint'),
    namespace: scope.namespace,
    engineNamespace: scope.engineNamespace,
    taskQueue: scope.taskQueue,
    stateDir: join(testEnv('stateDir'), `chaos-${scope.namespace}`),
    logDir: join(testEnv('stateDir'), 'logs'),
    subnetCidr: '10.231.192.0/20',
    workflowBundle: testEnv('workflowBundle'),
    staticHosts: 2,
    concurrency: 2,
    maxInstances: 2,
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await scope?.dispose();
});

describe('kill -9 of every hostflow process during a run', () => {
  it('serves every build and leaves nothing behind', async () => {
    const report = await runChaos(stack.target, {
      taskRuns: 16,
      kills: 6,
      seed: 1,
      buildMs: [1_000, 6_000],
      spreadMs: 15_000,
      timeoutMs: 360_000,
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(report));
    expect(report.kills).toBe(6);
    expect(report).toMatchObject({
      taskRuns: 16,
      served: 16,
      errors: 0,
      lost: 0,
      leakedUsers: 0,
      leakedVms: 0,
      leakedSlots: 0,
      leakedSecrets: 0,
      runningWorkflows: 0,
      unhealthyHosts: 0,
    });
  }, 420_000);
});
