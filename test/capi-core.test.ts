// Cluster API core itself (local-stack/capi-core.ts) on a second real cluster: its manager, built
// from the Go module proxy, runs with CAPI's own CRDs, and serves its webhooks on loopback with a
// certificate of a local CA. It does its part as it would in any cluster: it defaults and
// validates Machines, converts them between v1beta2 (stored) and v1beta1, and reconciles them
// with another provider's InfraMachine by the v1beta2 contract: it owns the InfraMachine, copies
// its providerID once it says it is provisioned, and deletes it with the Machine. The test plays
// that other provider (a small CRD of its own kind, and its status written by hand). hostflow
// does not run on this cluster: this is the neighbour its Machine family is to live beside
// (docs/machines.md).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { join } from 'node:path';
import { startCapiCore } from '../local-stack/capi-core.js';
import { installCrdObject } from '../local-stack/cluster-setup.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import { waitFor, type ManagedProcess } from '../local-stack/process.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { startOtherCluster, type OtherCluster } from './support/other-cluster.js';
import { OTHER_PROVIDER_GROUP, otherProviderCrd } from './support/other-provider.js';

const namespace = `capi-${uniqueSuffix()}`;
const GROUP = 'cluster.x-k8s.io';
const machines = { group: GROUP, version: 'v1beta2', plural: 'machines', namespace };

let other: OtherCluster;
let capi: ManagedProcess | undefined;
let custom: CustomObjectsApi;

interface Machine {
  apiVersion: string;
  metadata: { labels?: Record<string, string>; finalizers?: string[] };
  spec: { clusterName?: string; infrastructureRef?: Record<string, string>; providerID?: string };
  status?: { phase?: string };
}

const machine = (name: string, spec: object = {}) => ({
  apiVersion: `${GROUP}/v1beta2`,
  kind: 'Machine',
  metadata: { name },
  spec: {
    clusterName: 'workload',
    bootstrap: { dataSecretName: `${name}-bootstrap` },
    // Another provider's infrastructure: CAPI core alone acts on this Machine.
    infrastructureRef: {
      apiGroup: 'infrastructure.cluster.x-k8s.io',
      kind: 'DockerMachine',
      name,
    },
    ...spec,
  },
});

const INFRA_GROUP = OTHER_PROVIDER_GROUP;
const dockerMachines = {
  group: INFRA_GROUP,
  version: 'v1beta2',
  plural: 'dockermachines',
  namespace,
};

const read = async (name: string, version = 'v1beta2') =>
  (await custom.getNamespacedCustomObject({ ...machines, version, name })) as Machine;

beforeAll(async () => {
  other = await startOtherCluster('capi-cluster');
  custom = other.kc.makeApiClient(CustomObjectsApi);
  capi = await startCapiCore({
    kc: other.kc,
    kubeconfigPath: other.server.kubeconfigPath,
    stateDir: join(testEnv('stateDir'), 'capi-core'),
    logFile: join(other.logDir, 'capi-core.log'),
  });
  for (const kind of ['DockerCluster', 'DockerMachine']) {
    await installCrdObject(other.kc, otherProviderCrd(kind));
  }
  await other.kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } });
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: 'v1beta2',
    plural: 'clusters',
    namespace,
    body: {
      apiVersion: `${GROUP}/v1beta2`,
      kind: 'Cluster',
      metadata: { name: 'workload' },
      spec: {
        infrastructureRef: {
          apiGroup: 'infrastructure.cluster.x-k8s.io',
          kind: 'DockerCluster',
          name: 'workload',
        },
      },
    },
  });
}, 900_000);

afterAll(async () => {
  await capi?.stop();
  await other?.server.stop();
});

describe('Cluster API core on a local cluster', () => {
  it('defaults a Machine through its webhook, and refuses one its validation does not pass', async () => {
    await custom.createNamespacedCustomObject({ ...machines, body: machine('m1') });
    expect((await read('m1')).metadata.labels).toMatchObject({
      'cluster.x-k8s.io/cluster-name': 'workload',
    });
    await expect(
      custom.createNamespacedCustomObject({
        ...machines,
        body: machine('bad-version', { version: 'not a version' }),
      }),
    ).rejects.toMatchObject({
      code: 422,
      body: expect.stringMatching(
        /admission webhook .*validation\.machine\.cluster\.x-k8s\.io.* denied the request: .*spec\.version: .*must be a valid semantic version/,
      ),
    });
  });

  it('converts a stored v1beta2 Machine to v1beta1 through its conversion webhook', async () => {
    const old = await read('m1', 'v1beta1');
    expect(old.apiVersion).toBe(`${GROUP}/v1beta1`);
    expect(old.spec.clusterName).toBe('workload');
    expect(old.spec.infrastructureRef).toMatchObject({ kind: 'DockerMachine', name: 'm1' });
  });

  it("reconciles the Machine with its provider's InfraMachine by the contract, and deletes both", async () => {
    await custom.createNamespacedCustomObject({
      ...dockerMachines,
      body: {
        apiVersion: `${INFRA_GROUP}/v1beta2`,
        kind: 'DockerMachine',
        metadata: { name: 'm1' },
      },
    });
    // CAPI core takes the InfraMachine as the Machine's, and labels it with the Machine's cluster.
    const owned = await waitFor(
      'CAPI core to own DockerMachine m1',
      async () => {
        const infra = (await custom.getNamespacedCustomObject({
          ...dockerMachines,
          name: 'm1',
        })) as {
          metadata: {
            labels?: Record<string, string>;
            ownerReferences?: Array<Record<string, unknown>>;
          };
        };
        return infra.metadata.ownerReferences?.length ? infra : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(owned.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: `${GROUP}/v1beta2`,
        kind: 'Machine',
        name: 'm1',
        controller: true,
      }),
    ]);
    expect(owned.metadata.labels).toMatchObject({ 'cluster.x-k8s.io/cluster-name': 'workload' });
    expect((await read('m1')).metadata.finalizers).toContain('machine.cluster.x-k8s.io');

    // The provider says it is provisioned: CAPI core copies its providerID to the Machine.
    await custom.patchNamespacedCustomObject(
      { ...dockerMachines, name: 'm1', body: { spec: { providerID: 'docker:///m1' } } },
      MERGE_PATCH,
    );
    await custom.patchNamespacedCustomObjectStatus(
      {
        ...dockerMachines,
        name: 'm1',
        body: { status: { initialization: { provisioned: true } } },
      },
      MERGE_PATCH,
    );
    const provisioned = await waitFor(
      'Machine m1 to be Provisioned',
      async () => {
        const now = await read('m1');
        return now.status?.phase === 'Provisioned' ? now : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(provisioned.spec.providerID).toBe('docker:///m1');

    // Deleted, the Machine takes its InfraMachine with it, and goes.
    await custom.deleteNamespacedCustomObject({ ...machines, name: 'm1' });
    const gone = (call: Promise<unknown>) =>
      call.then(
        () => undefined,
        (err: { code?: number }) => err.code === 404 || undefined,
      );
    await waitFor(
      'Machine m1 and DockerMachine m1 to be gone',
      async () =>
        (await gone(read('m1'))) &&
        (await gone(custom.getNamespacedCustomObject({ ...dockerMachines, name: 'm1' })))
          ? true
          : undefined,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  });
});
