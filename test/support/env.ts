// What global-setup hands the test files, and clients built from it.
import { BatchV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { randomBytes } from 'node:crypto';

export const TEST_ENV = {
  kubeconfig: 'HOSTFLOW_TEST_KUBECONFIG',
  temporalAddress: 'HOSTFLOW_TEST_TEMPORAL_ADDRESS',
  temporalNamespace: 'HOSTFLOW_TEST_TEMPORAL_NAMESPACE',
  /** The dev server's web UI, e.g. http://127.0.0.1:41234, for the browser tests. */
  temporalUi: 'HOSTFLOW_TEST_TEMPORAL_UI',
  motoEndpoint: 'HOSTFLOW_TEST_MOTO_ENDPOINT',
  workflowBundle: 'HOSTFLOW_TEST_WORKFLOW_BUNDLE',
  stateDir: 'HOSTFLOW_TEST_STATE_DIR',
  /** The /metrics URL of the lock-audit receiver, which gets the API server's audit events. */
  lockAuditMetrics: 'HOSTFLOW_TEST_LOCK_AUDIT_METRICS',
  /** A worker's runner settings (JSON): the suite's one local node and its runner image. */
  runnerEnv: 'HOSTFLOW_TEST_RUNNER_ENV',
  /** The image a build pod's step runs on the suite's local node (curl and ssh). */
  buildStepImage: 'HOSTFLOW_TEST_BUILD_STEP_IMAGE',
} as const;

/** The runner settings a test's worker gets (local-stack/runner.ts). */
export const runnerEnv = (): Record<string, string> =>
  JSON.parse(testEnv('runnerEnv')) as Record<string, string>;

export function testEnv(key: keyof typeof TEST_ENV): string {
  const value = process.env[TEST_ENV[key]];
  if (!value)
    throw new Error(`${TEST_ENV[key]} is not set: run the tests through jest (global-setup)`);
  return value;
}

export function kube() {
  const kc = new KubeConfig();
  kc.loadFromFile(testEnv('kubeconfig'));
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    batch: kc.makeApiClient(BatchV1Api),
  };
}

/** A Temporal on its own, as a test file may start one (by default the suite's). */
export interface TemporalTarget {
  address: string;
  namespace: string;
}

export async function temporalClient(
  temporal?: TemporalTarget,
): Promise<{ client: Client; close(): Promise<void> }> {
  const address = temporal?.address ?? testEnv('temporalAddress');
  const connection = await Connection.connect({ address });
  return {
    client: new Client({
      connection,
      namespace: temporal?.namespace ?? testEnv('temporalNamespace'),
    }),
    close: () => connection.close(),
  };
}

/** A short random suffix for namespaces, task queues and names. */
export function uniqueSuffix(): string {
  return randomBytes(4).toString('hex');
}
