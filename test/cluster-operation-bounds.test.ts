// What a tenant's ClusterOperations make the engine keep is bounded (docs/provisionings.md,
// "Limits"): the hosts each step's status lists, the custom actions' text read into history, a
// spec's size (refused, and not sent into history whole), and the line of operations waiting on
// one Provisioning. Real bridge and worker processes, real SSH hosts as metal3 BareMetalHosts,
// real ansible-playbook running the project's kubespray stand-in over the real release (see
// cluster-operation.test.ts for why), and a tenant script whose recap names hosts of its own.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { PROVISIONING_API, RETRY_ANNOTATION, type ProvisioningSpec } from '../shared/bpa-api.js';
import { CLUSTER_OPERATION_API } from '../shared/cluster-operation-api.js';
import {
  MAX_ACTION_BYTES,
  MAX_ACTIONS_BYTES,
  MAX_QUEUED_OPERATIONS,
  MAX_SPEC_BYTES,
  MAX_STATUS_HOSTS,
  specSize,
} from '../shared/cluster-operation-limits.js';
import { WEEKDAYS } from '../shared/maintenance-window.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import type { BareMetalHosts } from './support/baremetal.js';
import {
  clusterOperations,
  installCluster,
  startOperationStack,
  operationWorkerEnv,
} from './support/cluster-operations.js';
import { startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { uniqueSuffix } from './support/env.js';
import { historyText } from './support/history-text.js';
import { hostflowOf } from './support/hostflow-cli.js';
import type { TestScope } from './support/scope.js';
import { interceptStatusWrites } from './support/status-webhook.js';

const sfx = uniqueSuffix();
const CLUSTER = 'cluster-bounds';
const ADDED = 300;
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;
let ops: ReturnType<typeof clusterOperations>;

/**
 * A recap of ADDED hosts, none of them the cluster's, as any script can print one (the progress
 * parser reads a script's output too); the last ten changed something.
 */
const MANY_HOSTS = `echo 'PLAY [Hosts of its own] ****'
echo 'PLAY RECAP ****'
for i in $(seq 0 ${ADDED - 1}); do
  printf 'bulk-%03d : ok=1 changed=%d unreachable=0 failed=0\\n' "$i" "$((i >= ${ADDED - 10}))"
done
`;

/** A playbook of `bytes` bytes that would do nothing. */
const filler = (bytes: number) => `# ${'x'.repeat(bytes - 3)}\n`;

beforeAll(async () => {
  ({ scope, metal, worker, bridge } = await startOperationStack('clbound', 2, sfx));
  await scope.kube.core.createNamespacedConfigMap({
    namespace: scope.namespace,
    body: {
      metadata: { name: 'actions' },
      data: {
        'many-hosts.sh': MANY_HOSTS,
        // Under the cap in characters, over it in bytes: 'é' is two.
        'wide.yml': `# ${'é'.repeat(MAX_ACTION_BYTES / 2)}\n`,
        ...Object.fromEntries(
          [1, 2, 3, 4, 5].map((i) => [`filler-${i}.yml`, filler(MAX_ACTION_BYTES - 4096)]),
        ),
      },
    },
  });
  await installCluster(scope, metal, { name: 'bounds', cluster: CLUSTER, workers: [1] });
  ops = clusterOperations(scope, metal, { name: 'bounds', cluster: CLUSTER });
}, 240_000);

afterAll(() => tearDown([bridge, worker], metal, scope));

/** Each step's extraVars is under its own cap (16 KiB); together they are over the spec's. */
const vars = (name: string) => ({ [name]: name.repeat(9000) });
const TOO_LARGE = {
  action: 'upgrade-cluster.yml',
  extraVars: vars('a'),
  preHook: [
    { action: 'cluster.yml', extraVars: vars('b') },
    { action: 'cluster.yml', extraVars: vars('c') },
  ],
  postHook: [{ action: 'cluster.yml', extraVars: vars('d') }],
};

const fromActions = { actionSource: 'configmap', actionSourceRef: { name: 'actions' } };

describe("what a tenant's ClusterOperations make the engine keep is bounded", () => {
  it('lists at most MAX_STATUS_HOSTS hosts in a step, those that changed first, and counts the rest', async () => {
    await ops.operate('many-hosts', {
      ...fromActions,
      actionType: 'shell',
      action: 'many-hosts.sh',
    });
    const done = await ops.ended('many-hosts');
    expect(done.phase).toBe('Succeeded');
    const [step] = done.steps!;
    expect(step!.hostsNotShown).toBe(ADDED - MAX_STATUS_HOSTS);
    const host = (i: number) => `bulk-${String(i).padStart(3, '0')}`;
    const changed = Array.from({ length: 10 }, (_, i) => host(ADDED - 10 + i));
    const unchanged = Array.from({ length: MAX_STATUS_HOSTS - 10 }, (_, i) => host(i));
    // Those that changed are listed, then the first of the rest (the API server sorts the keys).
    expect(Object.keys(step!.hosts!)).toEqual([...unchanged, ...changed]);
    expect(step!.hosts![changed[0]!]).toEqual({ ok: 1, changed: 1 });
  }, 180_000);

  it("runs an operation whose place in line the API server holds back, and the Provisioning's workflow replays", async () => {
    // A validating webhook nobody answers (a broken one, in a real cluster) for any status write
    // that gives `held` a place in line: the API server answers 500, and the engine retries. The
    // write that says `held` is first in line, and the turn that runs it, must not overlap in the
    // Provisioning's workflow (docs/architecture.md, "Local activities: one coroutine at a time").
    const lift = await intercept('unreachable', 'held', 'has(object.status.queuePosition)');
    try {
      await ops.operate('held', { action: 'upgrade-cluster.yml' });
      // Held for a while, though less than the engine retries a write for.
      await new Promise((resolve) => setTimeout(resolve, 12_000));
    } finally {
      await lift();
    }
    const done = await ops.ended('held', 180_000);
    expect(done.phase).toBe('Succeeded');
    // Its place in line was said before it ran, never over its run.
    expect(done.queuePosition).toBeUndefined();
    await expectToReplay(PROVISIONING);
    await expectToReplay(() => OPERATION('held'));
  }, 300_000);

  it('takes a slowly refused operation and one to run, both started while no worker ran, and their workflows replay', async () => {
    // No worker runs while the bridge starts the workflows of a refused operation and of one to
    // run. Once a worker is back, the refused one's status write waits out a webhook that never
    // answers, while the other asks its Provisioning for a turn and runs. Before v18 the
    // Provisioning's signal handler and main loop awaited local activities side by side here
    // (docs/architecture.md, "Local activities: one coroutine at a time"); since v19 each
    // operation writes its own status from its own workflow.
    const lift = await intercept('silent', 'refused-slowly', 'true');
    try {
      await worker.stop();
      await ops.operate('refused-slowly', TOO_LARGE);
      await ops.operate('after-it', { action: 'upgrade-cluster.yml' });
      await waitFor('the bridge to start both', async () => {
        const started = await Promise.all(
          ['refused-slowly', 'after-it'].map((name) =>
            scope.temporal.client.workflow
              .getHandle(OPERATION(name))
              .describe()
              .then(
                () => true,
                () => false,
              ),
          ),
        );
        return started.every(Boolean) ? true : undefined;
      });
      worker = await startWorker(scope, operationWorkerEnv(sfx, metal));
      expect((await ops.ended('refused-slowly')).phase).toBe('Failed');
      expect((await ops.ended('after-it', 180_000)).phase).toBe('Succeeded');
    } finally {
      await lift();
    }
    await expectToReplay(PROVISIONING);
    await expectToReplay(() => OPERATION('refused-slowly'));
    await expectToReplay(() => OPERATION('after-it'));
  }, 300_000);

  it("refuses custom actions whose text is too large for the operation's history", async () => {
    await ops.operate('wide', { ...fromActions, action: 'wide.yml' });
    const wide = await ops.ended('wide');
    expect(wide.message).toBe(
      `Nothing was run: ConfigMap ${scope.namespace}/actions key wide.yml is ` +
        `${MAX_ACTION_BYTES + 3} bytes: an action may be at most ${MAX_ACTION_BYTES}`,
    );
    const fillers = [1, 2, 3, 4, 5].map((i) => ({ ...fromActions, action: `filler-${i}.yml` }));
    await ops.operate('all-together', { ...fillers[0]!, preHook: fillers.slice(1) });
    const together = await ops.ended('all-together');
    expect(together.phase).toBe('Failed');
    expect(together.message).toBe(
      `Nothing was run: its custom actions are ${5 * (MAX_ACTION_BYTES - 4096)} bytes ` +
        `together: at most ${MAX_ACTIONS_BYTES}`,
    );
    expect(together.steps ?? []).toEqual([]);
  }, 120_000);

  it('refuses a spec too large to keep, and does not send it into history whole', async () => {
    await ops.operate('too-large', TOO_LARGE);
    const stored = (await scope.kube.custom.getNamespacedCustomObject({
      ...CLUSTER_OPERATION_API,
      namespace: scope.namespace,
      name: 'too-large',
    })) as { spec: Parameters<typeof specSize>[0] };
    const bytes = specSize(stored.spec);
    expect(bytes).toBeGreaterThan(MAX_SPEC_BYTES);
    const refused = await ops.ended('too-large');
    expect(refused.phase).toBe('Failed');
    expect(refused.message).toBe(
      `Nothing was run: spec is ${bytes} bytes of JSON: at most ${MAX_SPEC_BYTES}, hooks and ` +
        'extraVars included',
    );
    expect((await ops.eventOf('too-large', 'Refused')).message).toBe(refused.message);
    // Its own workflow was started with what names it, and refused it before it asked for a turn.
    const history = await historyText(scope.temporal.client, OPERATION('too-large'));
    expect(history).toContain('too-large');
    expect(history).not.toContain('a'.repeat(9000));
  }, 120_000);

  it('lets at most MAX_QUEUED_OPERATIONS wait on a Provisioning, and queues a refused one again on a retry', async () => {
    // A window that will not open during the test: every operation waits.
    const opens = new Date(Date.now() + 3 * 24 * 3600_000);
    await changeSpec({
      maintenanceWindow: { days: [WEEKDAYS[opens.getUTCDay()]!], start: '00:00', duration: '1h' },
    });
    await settled();
    const waiting = Array.from({ length: MAX_QUEUED_OPERATIONS }, (_, i) => `wait-${i}`);
    for (const name of waiting) await ops.operate(name, { action: 'upgrade-cluster.yml' });
    await waitFor('every operation to wait in line', async () => {
      const found = await Promise.all(waiting.map((name) => ops.status(name)));
      return found.every((s) => s.phase === 'Pending' && s.notBefore) ? true : undefined;
    });
    await ops.operate('one-too-many', { action: 'upgrade-cluster.yml' });
    const refused = await ops.ended('one-too-many');
    expect(refused).toMatchObject({
      phase: 'Failed',
      message:
        `Nothing was run: ${MAX_QUEUED_OPERATIONS} operations already wait for their turn on ` +
        `Provisioning bounds, the most that may: set the annotation ${RETRY_ANNOTATION} to ` +
        'queue it again once fewer wait',
    });
    // One leaves the line (those behind it are told their new places); the refused one, asked
    // again, takes the place left.
    await scope.kube.custom.deleteNamespacedCustomObject({
      ...CLUSTER_OPERATION_API,
      namespace: scope.namespace,
      name: waiting[0]!,
    });
    await waitFor('the line to move', async () =>
      (await ops.status(waiting[1]!)).queuePosition === 1 ? true : undefined,
    );
    await scope.kube.custom.patchNamespacedCustomObject(
      {
        ...CLUSTER_OPERATION_API,
        namespace: scope.namespace,
        name: 'one-too-many',
        body: { metadata: { annotations: { [RETRY_ANNOTATION]: '1' } } },
      },
      MERGE_PATCH,
    );
    // Its place is by creation time, as any operation's: among those created in its second.
    const queued = await waitFor('one-too-many to wait in line', async () => {
      const found = await ops.status('one-too-many');
      return found.phase === 'Pending' ? found : undefined;
    });
    expect(queued.queuePosition).toBeLessThanOrEqual(MAX_QUEUED_OPERATIONS);
  }, 180_000);
});

/** The Provisioning's workflow. */
const PROVISIONING = () => WORKFLOW_ID.provisioning(scope.namespace, 'bounds');
/** An operation's own workflow. */
const OPERATION = (name: string) => WORKFLOW_ID.clusterOperation(scope.namespace, name);

/** Status writes to `name` that meet `when` intercepted; `many-hosts`, ended first, the probe. */
const intercept = (mode: 'unreachable' | 'silent', name: string, when: string) =>
  interceptStatusWrites(scope, { mode, names: [name, 'many-hosts'], probe: 'many-hosts', when });

/** `hostflow replay` of the workflow, as on-call runs it after a worker restart: no divergence. */
async function expectToReplay(workflowId: () => string): Promise<void> {
  const replayed = await hostflowOf(scope, 'replay', workflowId());
  // stderr in the comparison, so that a failure shows the divergence
  expect({ code: replayed.code, stderr: replayed.stderr }).toEqual({
    code: 0,
    stderr: expect.any(String),
  });
}

const changeSpec = (spec: Partial<ProvisioningSpec>) =>
  scope.kube.custom.patchNamespacedCustomObject(
    { ...PROVISIONING_API, namespace: scope.namespace, name: 'bounds', body: { spec } },
    MERGE_PATCH,
  );

/** The Provisioning, once it has handled its latest spec and is Ready. */
const settled = () =>
  waitFor('the Provisioning to settle', async () => {
    const found = (await scope.kube.custom.getNamespacedCustomObject({
      ...PROVISIONING_API,
      namespace: scope.namespace,
      name: 'bounds',
    })) as { metadata: { generation: number }; status?: Record<string, unknown> };
    const { status } = found;
    return status?.phase === 'Ready' && status.observedGeneration === found.metadata.generation
      ? true
      : undefined;
  });
