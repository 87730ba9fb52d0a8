// The local-platform flow end to end, through the real bridge and worker processes against
// the real kube-apiserver and Temporal: contract filter, Secret, labels, cleanup, errors.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LABELS } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { startBridge, startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { createScope, type TestScope } from './support/scope.js';
import { waitFor } from '../local-stack/process.js';

let scope: TestScope;
let worker: EngineProcess;
let bridge: EngineProcess;

beforeAll(async () => {
  scope = await createScope('local', { 'local-platforms': 'linux/amd64,linux/ppc64le' });
  [worker, bridge] = await Promise.all([startWorker(scope), startBridge(scope)]);
});

afterAll(() => tearDown([bridge, worker], scope));

async function workflowOf(name: string) {
  const tr = await scope.taskRuns.get(name);
  const uid = (tr.metadata as { uid?: string }).uid!;
  return scope.temporal.client.workflow.getHandle(WORKFLOW_ID.taskRun(scope.namespace, name, uid));
}

describe('local platforms', () => {
  it('writes {host: localhost}, labels the TaskRun, and cleans up on completion', async () => {
    const { taskRuns } = scope;
    await taskRuns.create({ name: 'build-amd64', platform: 'linux/amd64' });
    const data = await taskRuns.waitForSecret('build-amd64');
    expect(data).toEqual({ host: 'localhost' });

    const secret = await taskRuns.secret('build-amd64');
    expect(secret?.metadata?.labels?.[LABELS.multiPlatformSecret]).toBe('true');
    await waitFor('TaskRun labels', async () => {
      const labels = (await taskRuns.get('build-amd64')).metadata.labels ?? {};
      return labels[LABELS.assignedHost] ? labels : undefined;
    }).then((labels) => {
      expect(labels[LABELS.assignedHost]).toBe('localhost');
      expect(labels[LABELS.targetPlatform]).toBe('linux-amd64');
    });

    const handle = await workflowOf('build-amd64');
    await taskRuns.complete('build-amd64');
    await taskRuns.waitForSecretGone('build-amd64');
    expect(await handle.result()).toEqual({ served: 'local' });
  });

  it('lets an operator find the workflow by namespace, name and platform', async () => {
    await scope.taskRuns.create({ name: 'findable', platform: 'linux/ppc64le' });
    await scope.taskRuns.waitForSecret('findable');
    const query =
      `K8sNamespace = '${scope.namespace}' AND K8sName = 'findable' AND Platform = 'linux/ppc64le' ` +
      `AND HostflowKind = 'taskrun'`;
    const found = await waitFor('visibility to list the workflow', async () => {
      const ids: string[] = [];
      for await (const wf of scope.temporal.client.workflow.list({ query }))
        ids.push(wf.workflowId);
      return ids.length > 0 ? ids : undefined;
    });
    expect(found).toHaveLength(1);
    const description = await (await workflowOf('findable')).describe();
    expect(await description.staticSummary()).toContain(`${scope.namespace}/findable`);
  });

  it('serves v1beta1 TaskRuns and inline task specs', async () => {
    await scope.taskRuns.create({
      name: 'beta-inline',
      platform: 'linux/amd64',
      apiVersion: 'tekton.dev/v1beta1',
      inline: true,
    });
    expect(await scope.taskRuns.waitForSecret('beta-inline')).toEqual({ host: 'localhost' });
  });
});

describe('the TaskRun contract', () => {
  it('leaves TaskRuns without the PLATFORM param or the secret volume untouched', async () => {
    const { taskRuns } = scope;
    await taskRuns.create({ name: 'no-platform' });
    await taskRuns.create({ name: 'no-volume', platform: 'linux/amd64', mountSecret: false });
    // A contract TaskRun created afterwards is the barrier: once it is served, the bridge has
    // seen the other two as well.
    await taskRuns.create({ name: 'barrier', platform: 'linux/amd64' });
    await taskRuns.waitForSecret('barrier');
    for (const name of ['no-platform', 'no-volume']) {
      expect(await taskRuns.secret(name)).toBeUndefined();
      const tr = await taskRuns.get(name);
      expect(tr.metadata.labels ?? {}).toEqual({});
      await expect((await workflowOf(name)).describe()).rejects.toThrow(/not found/i);
    }
  });
});

describe('error secrets', () => {
  it('rejects an invalid PLATFORM with an actionable message', async () => {
    await scope.taskRuns.create({ name: 'bad-platform', platform: 'linux/AMD64' });
    const data = await scope.taskRuns.waitForSecret('bad-platform');
    expect(Object.keys(data)).toEqual(['error']);
    expect(data.error).toMatch(/PLATFORM "linux\/AMD64".*not a valid name.*Fix the PLATFORM param/);
  });

  it('names an unknown platform and says how to configure it', async () => {
    await scope.taskRuns.create({ name: 'unknown-platform', platform: 'linux/s390x' });
    const data = await scope.taskRuns.waitForSecret('unknown-platform');
    expect(data.error).toContain('platform linux/s390x is not configured');
    expect(data.error).toContain(`ConfigMap ${scope.engineNamespace}/host-config`);
    expect(data.error).toContain('local-platforms');
  });

  it('reports a missing host-config, and recovers once it exists again', async () => {
    await scope.setHostConfig(undefined);
    try {
      await scope.taskRuns.create({ name: 'no-config', platform: 'linux/amd64' });
      const data = await scope.taskRuns.waitForSecret('no-config');
      expect(data.error).toMatch(
        /cannot read ConfigMap .*host-config: it does not exist.*Create it/,
      );
    } finally {
      await scope.setHostConfig({ 'local-platforms': 'linux/amd64,linux/ppc64le' });
    }
    await scope.taskRuns.create({ name: 'config-back', platform: 'linux/amd64' });
    expect(await scope.taskRuns.waitForSecret('config-back')).toEqual({ host: 'localhost' });
  });

  it('enforces allowed-namespaces and quotes broken config keys', async () => {
    await scope.setHostConfig({
      'local-platforms': 'linux/amd64',
      'allowed-namespaces': 'team-a-.*,(unclosed',
    });
    try {
      await scope.taskRuns.create({ name: 'not-allowed', platform: 'linux/amd64' });
      const data = await scope.taskRuns.waitForSecret('not-allowed');
      expect(data.error).toContain(
        `namespace "${scope.namespace}" may not use multi-platform hosts`,
      );
      await scope.setHostConfig({ 'local-platforms': 'linux/amd64,LINUX/arm64' });
      await scope.taskRuns.create({ name: 'broken-key', platform: 'linux/arm64' });
      const broken = await scope.taskRuns.waitForSecret('broken-key');
      expect(broken.error).toMatch(/local-platforms: PLATFORM "LINUX\/arm64"/);
    } finally {
      await scope.setHostConfig({ 'local-platforms': 'linux/amd64,linux/ppc64le' });
    }
  });

  it('still cleans up the error secret when the TaskRun completes', async () => {
    await scope.taskRuns.complete('bad-platform', false);
    await scope.taskRuns.waitForSecretGone('bad-platform');
  });
});

describe('a hostile tenant', () => {
  it('cannot have hostflow replace or delete a Secret it did not make, and the TaskRun says why', async () => {
    const { core } = scope.kube;
    const namespace = scope.namespace;
    const name = 'multi-platform-ssh-squatted';
    // A person's Secret under the TaskRun's Secret name: no mark of hostflow's or the original's.
    const written = await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name }, stringData: { host: 'someone@elsewhere' } },
    });
    await scope.taskRuns.create({ name: 'squatted', platform: 'linux/amd64' });
    const handle = await workflowOf('squatted');
    const events = await waitFor('Warning Events on TaskRun squatted', async () => {
      const list = await core.listNamespacedEvent({
        namespace,
        fieldSelector: 'involvedObject.name=squatted,involvedObject.kind=TaskRun,type=Warning',
      });
      const reasons = list.items.map((e) => e.reason);
      return reasons.includes('NotOwned') && reasons.includes('CannotServe')
        ? list.items
        : undefined;
    });
    const cannotServe = events.find((e) => e.reason === 'CannotServe')!.message!;
    expect(cannotServe).toContain(
      `Secret ${namespace}/${name} exists and was not made for this TaskRun`,
    );
    expect(cannotServe).toContain('Delete that Secret, then run the build again');

    await scope.taskRuns.complete('squatted');
    await handle.result();
    const after = await core.readNamespacedSecret({ namespace, name });
    expect(after.metadata?.resourceVersion).toBe(written.metadata?.resourceVersion);
    expect(Buffer.from(after.data!.host!, 'base64').toString()).toBe('someone@elsewhere');
  });
});
