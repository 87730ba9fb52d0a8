// What the chaos test files share: the chaos stack (bench/chaos-stack.ts) on a test scope, and
// what every chaos run must end with: each build served, and nothing left behind.
import { expect } from '@jest/globals';
import { join } from 'node:path';
import type { ChaosReport } from '../../bench/chaos-run.js';
import { startChaosStack, type ChaosStack } from '../../bench/chaos-stack.js';
import { testEnv } from './env.js';
import type { TestScope } from './scope.js';

/** The chaos stack in `scope`, on the suite's Temporal unless another is given. */
export function startTestChaosStack(
  scope: TestScope,
  options: { subnetCidr: string; temporal?: { address: string; namespace: string } },
): Promise<ChaosStack> {
  return startChaosStack({
    kubeconfigPath: testEnv('kubeconfig'),
    temporalAddress: options.temporal?.address ?? testEnv('temporalAddress'),
    temporalNamespace: options.temporal?.namespace ?? testEnv('temporalNamespace'),
    motoEndpoint: testEnv('motoEndpoint'),
    namespace: scope.namespace,
    engineNamespace: scope.engineNamespace,
    taskQueue: scope.taskQueue,
    stateDir: join(testEnv('stateDir'), `chaos-${scope.namespace}`),
    logDir: join(testEnv('stateDir'), 'logs'),
    subnetCidr: options.subnetCidr,
    workflowBundle: testEnv('workflowBundle'),
    staticHosts: 2,
    concurrency: 2,
    maxInstances: 2,
  });
}

/** Every one of `taskRuns` served, none failed or lost, and nothing of theirs left anywhere. */
export function expectServedAndNothingLeft(report: ChaosReport, taskRuns: number): void {
  expect(report).toMatchObject({
    taskRuns,
    served: taskRuns,
    errors: 0,
    lost: 0,
    leakedUsers: 0,
    leakedVms: 0,
    leakedSlots: 0,
    leakedSecrets: 0,
    runningWorkflows: 0,
    unhealthyHosts: 0,
  });
}
