// The bridge is stateless and level-triggered: events missed while it was down are caught
// by its start-up relist, two replicas never double-serve, and the worker can die mid-flow.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { SA } from '../shared/search-attributes.js';
import { waitFor } from '../local-stack/process.js';
import { startBridge, startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { createScope, type TestScope } from './support/scope.js';
import { testEnv } from './support/env.js';
import { startTcpProxy } from './support/tcp-proxy.js';

let scope: TestScope;
let worker: EngineProcess;
let bridge: EngineProcess;

beforeAll(async () => {
  scope = await createScope('resilience', { 'local-platforms': 'linux/amd64' });
  [worker, bridge] = await Promise.all([startWorker(scope), startBridge(scope)]);
});

afterAll(() => tearDown([bridge, worker], scope));

async function executionsIn(query: string): Promise<Array<{ workflowId: string; status: string }>> {
  const found: Array<{ workflowId: string; status: string }> = [];
  for await (const wf of scope.temporal.client.workflow.list({ query })) {
    found.push({ workflowId: wf.workflowId, status: wf.status.name });
  }
  return found;
}

describe('bridge downtime', () => {
  it('cleans up a TaskRun deleted while the bridge was stopped', async () => {
    const tr = await scope.taskRuns.create({ name: 'deleted-while-down', platform: 'linux/amd64' });
    await scope.taskRuns.waitForSecret(tr.name);
    await bridge.stop();
    await scope.taskRuns.delete(tr.name);
    bridge = await startBridge(scope);
    await scope.taskRuns.waitForSecretGone(tr.name);
    const handle = scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
    );
    expect(await handle.result()).toEqual({ served: 'local' });
  });

  it('serves TaskRuns created, and cleans up TaskRuns completed, while the bridge was stopped', async () => {
    const done = await scope.taskRuns.create({
      name: 'completes-while-down',
      platform: 'linux/amd64',
    });
    await scope.taskRuns.waitForSecret(done.name);
    await bridge.kill();
    await scope.taskRuns.complete(done.name);
    await scope.taskRuns.create({ name: 'created-while-down', platform: 'linux/amd64' });
    bridge = await startBridge(scope);
    await scope.taskRuns.waitForSecretGone(done.name);
    expect(await scope.taskRuns.waitForSecret('created-while-down')).toEqual({ host: 'localhost' });
  });
});

describe('Temporal unreachable', () => {
  it('starts the workflow of a TaskRun seen meanwhile once Temporal answers again, before any relist', async () => {
    // The only bridge watching is one that reaches Temporal through a proxy the test can cut.
    await bridge.stop();
    const proxy = await startTcpProxy(testEnv('temporalAddress'));
    const viaProxy = await startBridge(scope, { TEMPORAL_ADDRESS: proxy.address });
    const relists = () => viaProxy.tail(500).split('relist complete').length - 1;
    try {
      await waitFor('the bridge to list TaskRuns', () => (relists() > 0 ? true : undefined));
      proxy.cut();
      const tr = await scope.taskRuns.create({ name: 'sent-again', platform: 'linux/amd64' });
      await waitFor(
        'the bridge to fail to start its workflow',
        () =>
          viaProxy
            .tail(500)
            .includes(`TaskRun ${scope.namespace}/${tr.name} (active): could not signal`)
            ? true
            : undefined,
        { timeoutMs: 60_000 },
      );
      proxy.restore();
      // No change to the TaskRun and no relist (the next is minutes away): the retry started it.
      expect(await scope.taskRuns.waitForSecret(tr.name, 60_000)).toEqual({ host: 'localhost' });
      expect(relists()).toBe(1);
    } finally {
      await viaProxy.stop();
      await proxy.close();
      bridge = await startBridge(scope);
    }
  });
});

describe('worker crash', () => {
  it('finishes the flow after the worker is killed mid-flow and restarted', async () => {
    await worker.kill();
    const tr = await scope.taskRuns.create({ name: 'worker-down', platform: 'linux/amd64' });
    const handle = scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
    );
    // The bridge has started the workflow, but no worker runs it yet.
    await waitFor('the workflow to be started', () => handle.describe().then(() => true));
    expect(await scope.taskRuns.secret(tr.name)).toBeUndefined();

    worker = await startWorker(scope);
    expect(await scope.taskRuns.waitForSecret(tr.name)).toEqual({ host: 'localhost' });
    // Kill it once the workflow has recorded that it served the TaskRun (its Phase), so the
    // next worker must rebuild the waiting workflow from history.
    await waitFor('the workflow to record Phase=Ready', async () => {
      const phase = (await handle.describe()).typedSearchAttributes.get(SA.phase);
      return phase === 'Ready' ? true : undefined;
    });

    await worker.kill();
    await scope.taskRuns.complete(tr.name);
    worker = await startWorker(scope);
    await scope.taskRuns.waitForSecretGone(tr.name);
    expect(await handle.result()).toEqual({ served: 'local' });
  });
});

describe('two bridge replicas', () => {
  it('serve each TaskRun once, and never restart a finished workflow', async () => {
    const second = await startBridge(scope);
    try {
      const names = Array.from({ length: 20 }, (_, i) => `replica-${i}`);
      await Promise.all(
        names.map((name) => scope.taskRuns.create({ name, platform: 'linux/amd64' })),
      );
      for (const name of names)
        expect(await scope.taskRuns.waitForSecret(name)).toEqual({ host: 'localhost' });
      await Promise.all(names.map((name) => scope.taskRuns.complete(name)));
      for (const name of names) await scope.taskRuns.waitForSecretGone(name);

      // Restarting a replica relists every TaskRun and signals them all again: each finished
      // workflow must refuse the late start instead of serving its TaskRun a second time.
      await second.stop();
      const third = await startBridge(scope);
      try {
        await waitFor('the new replica to finish its relist', () =>
          third.tail(100).includes('relist complete') ? true : undefined,
        );
        const query = `K8sNamespace = '${scope.namespace}' AND K8sName STARTS_WITH 'replica-'`;
        const executions = await waitFor('visibility to settle', async () => {
          const found = await executionsIn(query);
          return found.length >= names.length && found.every((e) => e.status === 'COMPLETED')
            ? found
            : undefined;
        });
        expect(executions).toHaveLength(names.length);
        expect(new Set(executions.map((e) => e.workflowId)).size).toBe(names.length);
        for (const name of names) expect(await scope.taskRuns.secret(name)).toBeUndefined();
      } finally {
        await third.stop();
      }
    } finally {
      await second.stop();
    }
  });
});
