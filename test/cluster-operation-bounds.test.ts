// What a tenant's ClusterOperations make the engine keep is bounded (docs/provisionings.md,
// "Limits"): the hosts each step's status lists, the custom actions' text read into history, a
// spec's size (refused, and not sent into history whole), and the line of operations waiting on
// one Provisioning. Real bridge and worker processes, real SSH hosts as metal3 BareMetalHosts,
// real ansible-playbook running the project's kubespray stand-in over the real release (see
// cluster-operation.test.ts for why), and a tenant script whose recap names hosts of its own.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  MAX_ACTION_BYTES,
  MAX_ACTIONS_BYTES,
  MAX_STATUS_HOSTS,
} from '../shared/cluster-operation-limits.js';
import { registerBareMetalHosts, type BareMetalHosts } from './support/baremetal.js';
import { clusterOperations, installCluster } from './support/cluster-operations.js';
import { startBridge, startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { uniqueSuffix } from './support/env.js';
import { kubesprayWorkerEnv } from './support/kubespray.js';
import { createScope, type TestScope } from './support/scope.js';

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
  scope = await createScope('clbound');
  metal = await registerBareMetalHosts(scope, { count: 2, sfx });
  worker = await startWorker(scope, {
    ...kubesprayWorkerEnv(sfx),
    HOSTFLOW_BAREMETAL_NAMESPACES: metal.namespace,
  });
  bridge = await startBridge(scope);
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
});
