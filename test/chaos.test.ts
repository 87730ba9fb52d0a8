// The chaos suite, small: TaskRuns on local, static, dynamic and pool platforms while the worker,
// the bridge and the OTP service are killed with SIGKILL at random points (each comes back, as
// under `hostflow start` or a Deployment), and builds complete meanwhile. Every build is served
// (capacity exists for all, in turn), and nothing is left behind. bench/chaos.ts runs 200.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runChaos } from '../bench/chaos-run.js';
import type { ChaosStack } from '../bench/chaos-stack.js';
import { expectServedAndNothingLeft, startTestChaosStack } from './support/chaos.js';
import { createScope, type TestScope } from './support/scope.js';

let scope: TestScope;
let stack: ChaosStack;

beforeAll(async () => {
  scope = await createScope('chaos');
  stack = await startTestChaosStack(scope, { subnetCidr: '10.231.192.0/20' });
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
    expectServedAndNothingLeft(report, 16);
  }, 420_000);
});
