// When a ClusterOperation gets its turn: after the Provisioning's own spec change, before a spec
// change made while it runs, and only in the Provisioning's maintenance window; and how many
// ended ones the Provisioning keeps. Real bridge and
// worker processes, real SSH hosts as metal3 BareMetalHosts, real ansible-playbook running the
// project's kubespray stand-in over the real release (see cluster-operation.test.ts for why). The
// namespace is not lockable: no Lock refuses the spec change, so the workflow must order them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { waitFor } from '../local-stack/process.js';
import { PROVISIONING_API, type ProvisioningSpec } from '../shared/bpa-api.js';
import { WEEKDAYS } from '../shared/maintenance-window.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import type { BareMetalHosts } from './support/baremetal.js';
import {
  clusterOperations,
  installCluster,
  startOperationStack,
} from './support/cluster-operations.js';
import { type EngineProcess, tearDown } from './support/engine.js';
import { uniqueSuffix } from './support/env.js';
import { answer } from './support/refusals.js';
import type { TestScope } from './support/scope.js';

const sfx = uniqueSuffix();
const CLUSTER = 'cluster-turns';
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;
let ops: ReturnType<typeof clusterOperations>;

beforeAll(async () => {
  ({ scope, metal, worker, bridge } = await startOperationStack('clturn', 3, sfx));
  await installCluster(scope, metal, { name: 'turns', cluster: CLUSTER, workers: [1] });
  ops = clusterOperations(scope, metal, { name: 'turns', cluster: CLUSTER });
}, 240_000);

afterAll(() => tearDown([bridge, worker], metal, scope));

const changeSpec = (spec: Partial<ProvisioningSpec>) =>
  scope.kube.custom.patchNamespacedCustomObject(
    { ...PROVISIONING_API, namespace: scope.namespace, name: 'turns', body: { spec } },
    MERGE_PATCH,
  );
const workersOn = (indexes: number[]) =>
  indexes.map((i) => ({ [i === 1 ? 'worker' : `worker${i}`]: { 'mac-address': metal.macs[i]! } }));

/** The Provisioning, once it has handled its latest spec and is Ready. */
const settled = () =>
  waitFor('the Provisioning to settle', async () => {
    const found = (await scope.kube.custom.getNamespacedCustomObject({
      ...PROVISIONING_API,
      namespace: scope.namespace,
      name: 'turns',
    })) as {
      metadata: { generation: number };
      status?: { phase?: string; observedGeneration?: number; workers?: number };
    };
    const { status } = found;
    return status?.phase === 'Ready' && status.observedGeneration === found.metadata.generation
      ? status
      : undefined;
  });

describe('a ClusterOperation waits its turn', () => {
  it("waits for the Provisioning's spec change to be carried out, and says so", async () => {
    // The new worker is slow to install: the scale is still running when the operation comes.
    await ops.withFault(2, 'slow', '8', async () => {
      await changeSpec({ workers: workersOn([1, 2]) });
      await waitFor('the scale to run', async () =>
        (await ops.provisioning())?.phase === 'Scaling' ? true : undefined,
      );
      await ops.operate('after-scale', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.1' },
      });
      const waiting = await waitFor('after-scale to say why it waits', async () => {
        const found = await ops.status('after-scale');
        return found.phase === 'Pending' && found.message ? found : undefined;
      });
      expect(waiting.message).toBe(
        'Waiting: Provisioning turns is carrying out its spec (Scaling) first; 0 operation(s) ' +
          `ahead of it on cluster ${CLUSTER}.`,
      );
      expect((await ops.ended('after-scale')).phase).toBe('Succeeded');
    });
    // It ran on the cluster as the scale left it: the new worker was upgraded too.
    expect(await ops.versions()).toEqual(['1.35.1', '1.35.1', '1.35.1']);
    expect((await settled()).workers).toBe(2);
  }, 180_000);

  it('holds a spec change made while it runs until it has ended', async () => {
    await ops.withFault(0, 'slow', '6', async () => {
      await ops.operate('before-scale', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.2' },
      });
      await ops.actionRunning('before-scale');
      // No Lock in this namespace: the change is taken, and waits in the workflow.
      await changeSpec({ workers: workersOn([1]) });
      const scaledDuring: string[] = [];
      const done = await waitFor(
        'before-scale to end',
        async () => {
          const phase = (await ops.provisioning())?.phase;
          const found = await ops.status('before-scale');
          if (found.phase === 'Running' && phase !== 'Ready') scaledDuring.push(phase ?? '');
          return ['Succeeded', 'Failed'].includes(found.phase ?? '') ? found : undefined;
        },
        { timeoutMs: 120_000 },
      );
      expect(done.phase).toBe('Succeeded');
      expect(scaledDuring).toEqual([]);
    });
    expect((await settled()).workers).toBe(1);
    // The removed worker was upgraded with the rest (else the upgrade would have failed on it:
    // no kubelet), then reset: the scale came after.
    expect(await ops.versions()).toEqual(['1.35.2', '1.35.2', '']);
  }, 180_000);

  it('waits for the maintenance window, saying until when, then runs', async () => {
    // A window that opens at the next whole minute at least 20 s away, on that day only.
    const opens = new Date(Math.ceil((Date.now() + 20_000) / 60_000) * 60_000);
    const start = opens.toISOString().slice(11, 16);
    const day = WEEKDAYS[opens.getUTCDay()]!;
    expect(await answer(changeSpec({ maintenanceWindow: { start, duration: '25h' } }))).toMatch(
      /^422: .*duration must be more than 0 and at most 24h/,
    );
    const firstLog = (await ops.status('after-scale')).steps![0]!.log!;
    expect(existsSync(firstLog)).toBe(true);
    // It also keeps only the two newest operations that ended.
    await changeSpec({
      maintenanceWindow: { days: [day], start, duration: '1h' },
      operationHistoryLimit: 2,
    });
    await settled();
    await ops.operate('windowed', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: '1.35.3' },
    });
    const waiting = await waitFor('windowed to wait for the window', async () => {
      const found = await ops.status('windowed');
      return found.notBefore ? found : undefined;
    });
    expect(waiting).toMatchObject({ phase: 'Pending', notBefore: opens.toISOString() });
    expect(waiting.message).toBe(
      `Waiting: the maintenance window of Provisioning turns (${day} ${start} UTC for 1h) opens ` +
        `at ${opens.toISOString()}; 0 operation(s) ahead of it on cluster ${CLUSTER}.`,
    );
    const done = await ops.ended('windowed', 150_000);
    expect(done.phase).toBe('Succeeded');
    expect(Date.parse(done.startTime!)).toBeGreaterThanOrEqual(opens.getTime());
    expect((await ops.versions()).slice(0, 2)).toEqual(['1.35.3', '1.35.3']);
    // The oldest went, with its log; the two newest stay.
    await waitFor('after-scale to be deleted', async () =>
      (await answer(ops.status('after-scale'))).startsWith('404') ? true : undefined,
    );
    // Its log goes once it is deleted (the workflow removes the logs of what it pruned).
    await waitFor("after-scale's log to be removed", () =>
      existsSync(firstLog) ? undefined : true,
    );
    expect((await ops.status('before-scale')).phase).toBe('Succeeded');
  }, 240_000);
});
