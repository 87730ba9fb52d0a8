// One Temporal namespace, one Kubernetes cluster (runtime/namespace-claim.ts): the engine claims
// the tests' Temporal namespace for the shared cluster as it starts, and the worker and the bridge
// of a second, real cluster (its own etcd and kube-apiserver) pointed at the same namespace refuse
// to start, naming both clusters, while this cluster's engines go on starting.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { engineCommand, type EngineKind } from '../local-stack/engine.js';
import type { KubeApiServer } from '../local-stack/kube-apiserver.js';
import { CLAIM_SCHEDULE_ID } from '../runtime/namespace-claim.js';
import {
  engineEnv,
  startBridge,
  startWorker,
  tearDown,
  type EngineProcess,
} from './support/engine.js';
import { testEnv } from './support/env.js';
import { startOtherCluster } from './support/other-cluster.js';
import { createScope, type TestScope } from './support/scope.js';

const run = promisify(execFile);

let scope: TestScope;
let other: KubeApiServer;
let worker: EngineProcess;
let bridge: EngineProcess;

beforeAll(async () => {
  scope = await createScope('claim');
  // A second cluster, bare: the engine must refuse it before it looks for anything else.
  other = (await startOtherCluster('other-cluster')).server;
  worker = await startWorker(scope);
  bridge = await startBridge(scope);
}, 180_000);

afterAll(async () => {
  await tearDown([worker, bridge], scope);
  await other?.stop();
});

/** The uid of a cluster's kube-system namespace: what the claim knows a cluster by. */
async function clusterUid(kubeconfigPath: string): Promise<string> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const found = await kc.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' });
  return found.metadata!.uid!;
}

/** Starts an engine process as deployed against `kubeconfig`; its exit code and output. */
async function startAgainst(kind: EngineKind, kubeconfig: string) {
  const { args, env } = await engineCommand(kind);
  return run(process.execPath, args, {
    env: { ...process.env, ...env, ...engineEnv(scope), KUBECONFIG: kubeconfig },
    timeout: 60_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({
      code: err.code,
      output: err.stdout + err.stderr,
    }),
  );
}

describe('one Temporal namespace serves one Kubernetes cluster', () => {
  it("is claimed for this cluster by its engine's start, in a schedule that never runs", async () => {
    const claim = await scope.temporal.client.schedule.getHandle(CLAIM_SCHEDULE_ID).describe();
    expect(claim.memo).toMatchObject({
      kubernetesClusterUid: await clusterUid(testEnv('kubeconfig')),
    });
    expect(claim.state.paused).toBe(true);
    expect(claim.state.note).toContain(`serves Kubernetes cluster `);
    expect([claim.info.numActionsTaken, claim.info.nextActionTimes]).toEqual([0, []]);
  });

  it.each(['worker', 'bridge'] as const)(
    'refuses a %s of another cluster, naming both clusters and what to do',
    async (kind) => {
      const [ours, theirs] = [
        await clusterUid(testEnv('kubeconfig')),
        await clusterUid(other.kubeconfigPath),
      ];
      expect(theirs).not.toBe(ours);
      const refused = await startAgainst(kind, other.engineKubeconfigPath);
      expect(refused.code).toBe(1);
      expect(refused.output).toContain(
        `Temporal namespace ${testEnv('temporalNamespace')} serves Kubernetes cluster ${ours} (`,
      );
      expect(refused.output).toContain(`this engine runs for cluster ${theirs} (${other.url})`);
      expect(refused.output).toContain(
        `temporal schedule delete --schedule-id ${CLAIM_SCHEDULE_ID}`,
      );
      // This cluster's engine is untouched, and still holds the namespace.
      const claim = await scope.temporal.client.schedule.getHandle(CLAIM_SCHEDULE_ID).describe();
      expect(claim.memo).toMatchObject({ kubernetesClusterUid: ours });
    },
    90_000,
  );

  it('starts another engine of this cluster on the same namespace', async () => {
    const again = await startWorker({ ...scope, taskQueue: `${scope.taskQueue}-again` });
    await again.stop();
  }, 90_000);
});
