// The host-config entity never loses a change at continue-as-new: a change that arrives while a
// run handles the previous one (here: while it reports 500 problems, one Event each) is handled,
// even when that run continues as new right after (its history limit is set to 1 here).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { hostConfigObserved, type HostConfigWorkflow } from '../shared/contracts/host-config.js';
import { startWorker, type EngineProcess } from './support/engine.js';
import { createScope, type TestScope } from './support/scope.js';

let scope: TestScope;
let worker: EngineProcess;

beforeAll(async () => {
  scope = await createScope('hccan');
  worker = await startWorker(scope);
});

afterAll(async () => {
  await worker?.stop();
  await scope?.dispose();
});

/** 100 broken host entries: about 500 problems, each reported as its own Event. */
function brokenHosts(): Record<string, string> {
  const data: Record<string, string> = {};
  for (let i = 0; i < 100; i++) data[`host.b${i}.address`] = 'not an address!';
  return data;
}

async function problemEvents(): Promise<string[]> {
  const list = await scope.kube.core.listNamespacedEvent({ namespace: scope.engineNamespace });
  return list.items.filter((e) => e.reason === 'InvalidHostConfig').map((e) => e.message ?? '');
}

describe('host-config changes around a continue-as-new', () => {
  it('handles a change that arrives while the previous one is being handled', async () => {
    await scope.setHostConfig(brokenHosts());
    const handle = await scope.temporal.client.workflow.start<HostConfigWorkflow>(
      'hostConfigWorkflow',
      {
        workflowId: WORKFLOW_ID.hostConfig(scope.engineNamespace),
        taskQueue: scope.taskQueue,
        args: [{ engineNamespace: scope.engineNamespace, maxHistory: 1 }],
      },
    );
    try {
      await handle.signal(hostConfigObserved, { resourceVersion: 'first' });
      await waitFor('the first change being reported', async () =>
        (await problemEvents()).length > 0 ? true : undefined,
      );
      await scope.setHostConfig({ ...brokenHosts(), 'host.marker.address': 'still wrong' });
      await handle.signal(hostConfigObserved, { resourceVersion: 'second' });
      const reported = await waitFor(
        'the second change reported too',
        async () => (await problemEvents()).find((m) => m.startsWith('host.marker.')),
        { timeoutMs: 60_000 },
      );
      expect(reported).toMatch(/host\.marker\./);
      const description = await handle.describe();
      expect(description.status.name).toBe('RUNNING');
    } finally {
      await handle.terminate('test over').catch(() => undefined);
    }
  });
});
