// Provisionings end to end: real bridge and worker processes, real SSH hosts registered as
// metal3 BareMetalHosts (their real MACs and IPs in the status), real ansible-playbook. The
// playbooks are the project's stand-in for kubespray (local-stack/kubespray-stand-in): real
// kubespray cannot install Kubernetes on hosts that share this machine's kernel and have no
// systemd. They connect to every node with become, check the inventory as kubespray does, and
// write /etc/kubernetes/admin.conf on the first control plane, where the engine reads it over SSH.
// Each run is a runner Job on the suite's local kubelet.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setHeaderOptions } from '@kubernetes/client-node';
import { waitFor } from '../local-stack/process.js';
import {
  BAREMETALHOST_API,
  HOST_SSH_ANNOTATIONS,
  PROVISIONING_API,
  PROVISIONING_FINALIZER,
  type ProvisioningSpec,
} from '../shared/bpa-api.js';
import { statusCode } from '../shared/kube-errors.js';
import { HOST_KEY_STORE_NAME, storeKey } from '../activities/kubernetes/host-key-store.js';
import { registerBareMetalHosts, type BareMetalHosts } from './support/baremetal.js';
import { startBridge, startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { uniqueSuffix } from './support/env.js';
import { kubesprayWorkerEnv } from './support/kubespray.js';
import { createProvisioning } from './support/cluster-operations.js';
import { historyText } from './support/history-text.js';
import { createScope, type TestScope } from './support/scope.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const sfx = uniqueSuffix();
/** The node label whose host is told to fail at "Install kubelet" (its stand-in fail-at file). */
const DOOMED = 'doomed-worker';
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;
let macs: string[];
let metal3: string;

interface ProvisioningStatus {
  phase?: string;
  step?: string;
  nodes?: Array<{ label: string; roles: string[]; host: string; ip: string }>;
  install?: { failedHost?: string; failedTask?: string; log?: string };
  kubeconfigSecret?: string;
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

beforeAll(async () => {
  scope = await createScope('prov');
  metal = await registerBareMetalHosts(scope, { count: 3, sfx });
  ({ macs, namespace: metal3 } = metal);
  const env = {
    ...kubesprayWorkerEnv(sfx),
    // Other test files register hosts too, in their own namespaces: these are this file's. The
    // pattern setting, not the older single name: before it, every other namespace was open.
    HOSTFLOW_BAREMETAL_NAMESPACES: metal3,
  };
  worker = await startWorker(scope, env);
  bridge = await startBridge(scope);
}, 120_000);

afterAll(() => tearDown([bridge, worker], metal, scope));

const create = (
  name: string,
  cluster: string,
  spec: ProvisioningSpec,
  labels: Record<string, string> = {},
) => createProvisioning(scope, name, cluster, spec, labels);

const get = (name: string) =>
  scope.kube.custom
    .getNamespacedCustomObject({ ...PROVISIONING_API, namespace: scope.namespace, name })
    .then(
      (found) => found as { metadata: { finalizers?: string[] }; status?: ProvisioningStatus },
      (err: unknown) => {
        if (statusCode(err) === 404) return undefined;
        throw err;
      },
    );

/** Waits for the phase, keeping the phases seen on the way (as `kubectl get bpa -w` shows them). */
/** The workflows on-call finds with `query` in the UI (search attributes are indexed shortly after). */
const foundBy = (query: string) =>
  waitFor(`a workflow where ${query}`, async () => {
    const ids: string[] = [];
    for await (const w of scope.temporal.client.workflow.list({ query })) ids.push(w.workflowId);
    return ids.length ? ids : undefined;
  });

/** The columns `kubectl get provisioning <name>` prints (the API server's Table, no -o wide). */
async function printed(name: string): Promise<Record<string, unknown>> {
  const table = (await scope.kube.custom.getNamespacedCustomObject(
    { ...PROVISIONING_API, namespace: scope.namespace, name },
    setHeaderOptions('Accept', 'application/json;as=Table;v=v1;g=meta.k8s.io'),
  )) as {
    columnDefinitions: Array<{ name: string; priority: number }>;
    rows: Array<{ cells: unknown[] }>;
  };
  return Object.fromEntries(
    table.columnDefinitions
      .map((column, index) => [column, table.rows[0]!.cells[index]] as const)
      .filter(([column]) => !column.priority)
      .map(([column, cell]) => [column.name, cell]),
  );
}

async function phase(
  name: string,
  wanted: string,
  seen: string[] = [],
): Promise<ProvisioningStatus> {
  return waitFor(
    `Provisioning ${name} to be ${wanted}`,
    async () => {
      const status = (await get(name))?.status;
      if (status?.phase && seen.at(-1) !== status.phase) seen.push(status.phase);
      if (status?.phase === wanted) return status;
      if (['Failed', 'Refused', 'Ready'].includes(status?.phase ?? '')) {
        throw new Error(`${name} is ${status!.phase}: ${status!.conditions?.[0]?.message}`);
      }
      return undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200 },
  );
}

/** The status of `name` once `done` holds of it (a host freed, an install that runs). */
const statusWhen = (name: string, what: string, done: (status: ProvisioningStatus) => boolean) =>
  waitFor(
    `Provisioning ${name} ${what}`,
    async () => {
      const status = (await get(name))?.status;
      return status && done(status) ? status : undefined;
    },
    { timeoutMs: 240_000 },
  );

/** The phase and message once role assignment is over: Refused, or on to claim and install. */
async function decided(name: string): Promise<{ phase: string; message: string }> {
  return waitFor(
    `Provisioning ${name} to get past role assignment`,
    async () => {
      const status = (await get(name))?.status;
      if (!status?.phase || status.phase === 'Assigning') return undefined;
      return { phase: status.phase, message: status.conditions?.[0]?.message ?? '' };
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
}

const consumerOf = async (index: number) => (await metal.consumerOf(index))?.split('/')[1];
/** The admin user's authorized_keys on host `index`, as root reads it there. */
const authorizedKeys = async (index: number) => {
  const host = metal.pool.hosts[index]!;
  const found = await host.exec(['sh', '-c', `cat ~${host.adminUser}/.ssh/authorized_keys`]);
  return found.stdout;
};
/** The installer key of cluster-alpha as authorized_keys lists it, read before it is deleted. */
let alphaKey = '';
const marker = (index: number) => metal.marker(index);
/** Sets (or, with undefined, removes) host `index`'s given host key annotation. */
const annotate = (index: number, key: string | undefined) => {
  const path = '/metadata/annotations/hostflow.dev~1ssh-host-key';
  return scope.kube.custom.patchNamespacedCustomObject({
    ...BAREMETALHOST_API,
    namespace: metal3,
    name: `node-${index}`,
    body: [key === undefined ? { op: 'remove', path } : { op: 'add', path, value: key }],
  });
};
/** The engine's host key records (first use), if it made any yet. */
const readStore = () =>
  scope.kube.core
    .readNamespacedConfigMap({ name: HOST_KEY_STORE_NAME, namespace: scope.engineNamespace })
    .catch((err: unknown) => {
      if (statusCode(err) === 404) return undefined;
      throw err;
    });

/** The Events of this reason, once there are `count` (they follow the status write). */
const events = (reason: string, count: number) =>
  waitFor(`${count} ${reason} Events`, async () => {
    const found = (
      await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace })
    ).items.filter((e) => e.reason === reason);
    return found.length >= count ? found : undefined;
  });

describe('a Provisioning', () => {
  it('installs its cluster: roles by MAC and by resources, IPs from the NICs, kubeconfig kept', async () => {
    const seen: string[] = [];
    // The original took virtlet VM pods as hosts for this label: hostflow warns, and goes on.
    await create(
      'alpha',
      'cluster-alpha',
      {
        masters: [{ master: { 'mac-address': macs[0]!.toUpperCase() } }],
        workers: [{ 'worker-1': { 'mac-address': macs[1]! } }, { 'worker-2': { cpu: 12 } }],
        PodSubnet: '10.244.64.0/18',
      },
      { 'cluster-type': 'virtlet-vm' },
    );
    const status = await phase('alpha', 'Ready', seen);
    console.log(`phases of alpha: ${seen.join(' → ')}`);
    // As `kubectl get bpa -w` shows them; Assigning takes milliseconds, too short to poll.
    expect(seen.slice(-2)).toEqual(['Installing', 'Ready']);
    expect(status.nodes).toEqual([
      {
        label: 'master',
        roles: ['master'],
        host: `${metal3}/node-0`,
        ip: metal.pool.hosts[0]!.address,
        user: metal.pool.hosts[0]!.adminUser,
      },
      {
        label: 'worker-1',
        roles: ['worker'],
        host: `${metal3}/node-1`,
        ip: metal.pool.hosts[1]!.address,
        user: metal.pool.hosts[1]!.adminUser,
      },
      {
        label: 'worker-2',
        roles: ['worker'],
        host: `${metal3}/node-2`,
        ip: metal.pool.hosts[2]!.address,
        user: metal.pool.hosts[2]!.adminUser,
      },
    ]);
    expect(await marker(2)).toBe('worker-2 in cluster-alpha');
    const secret = await scope.kube.core.readNamespacedSecret({
      name: 'cluster-alpha-kubeconfig',
      namespace: scope.namespace,
    });
    expect(Buffer.from(secret.data!.value!, 'base64').toString('utf8')).toContain(
      `server: https://${metal.pool.hosts[0]!.address}:6443`,
    );
    const ipMap = await scope.kube.core.readNamespacedConfigMap({
      name: 'cluster-alpha-configmap',
      namespace: scope.namespace,
    });
    expect(ipMap.data).toEqual({
      MASTER_master: metal.pool.hosts[0]!.address,
      'WORKER_worker-1': metal.pool.hosts[1]!.address,
      'WORKER_worker-2': metal.pool.hosts[2]!.address,
    });
    expect([await consumerOf(0), await consumerOf(1), await consumerOf(2)]).toEqual([
      'alpha',
      'alpha',
      'alpha',
    ]);
    expect((await get('alpha'))?.metadata.finalizers).toContain(PROVISIONING_FINALIZER);
    expect(await events('Provisioned', 1)).toHaveLength(1);
    const ignored = await events('ClusterTypeIgnored', 1);
    expect(ignored.map((e) => [e.type, e.involvedObject.name, e.message])).toEqual([
      [
        'Warning',
        'alpha',
        'the label cluster-type: virtlet-vm asks for virtlet VM pods as hosts, which hostflow does not provision: it installs on BareMetalHosts, as for any Provisioning. Remove the label to say so, or delete the Provisioning if VMs were meant',
      ],
    ]);
    // On-call finds it by kind, phase and cluster, as Machines and TaskRuns are found.
    expect(
      await foundBy(
        `HostflowKind = 'provisioning' AND K8sNamespace = '${scope.namespace}' AND ` +
          `K8sName = 'alpha' AND Phase = 'Ready' AND ClusterName = 'cluster-alpha'`,
      ),
    ).toEqual([`provisioning/${scope.namespace}/alpha`]);
    // Neither the installer key nor the kubeconfig's credentials are in the workflow's history.
    const installer = await scope.kube.core.readNamespacedSecret({
      name: 'cluster-alpha-ssh-key',
      namespace: scope.namespace,
    });
    const privateKey = Buffer.from(installer.data!.id_rsa!, 'base64').toString('utf8');
    const keyBody = privateKey.split('\n').find((line) => line && !line.startsWith('-----'))!;
    const token = /token: (\S+)/.exec(
      Buffer.from(secret.data!.value!, 'base64').toString('utf8'),
    )![1]!;
    const history = await historyText(
      scope.temporal.client,
      `provisioning/${scope.namespace}/alpha`,
    );
    expect(history).toContain('cluster-alpha');
    for (const secretValue of [keyBody, token]) expect(history).not.toContain(secretValue);
    alphaKey = Buffer.from(installer.data!['id_rsa.pub']!, 'base64').toString('utf8').trim();
    for (const index of [0, 1, 2]) {
      expect((await authorizedKeys(index)).split('\n')).toContain(alphaKey);
    }
  });

  it('refuses what can never work, with the reason in its status and an Event, touching nothing', async () => {
    await create('even', 'cluster-even', {
      masters: [{ 'master-1': {} }, { 'master-2': {} }],
    });
    await create('taken', 'cluster-taken', { masters: [{ m: { 'mac-address': macs[1]! } }] });
    await create('pinned', 'cluster-pinned', {
      masters: [{ 'p-master': {} }],
      kubesprayRelease: 'v2.30.0',
    });
    const even = await phase('even', 'Refused');
    expect(even.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'Refused',
      message: expect.stringContaining('2 masters make an even etcd member count'),
    });
    const taken = await phase('taken', 'Refused');
    expect(taken.conditions?.[0]?.message).toBe(
      `master m: MAC ${macs[1]} is BareMetalHost ${metal3}/node-1, which serves Provisioning ${scope.namespace}/alpha`,
    );
    // The worker has kubespray v2.31.0 only: a pin of another release is refused before any
    // host is claimed or given a key.
    const pinned = await phase('pinned', 'Refused');
    expect(pinned.conditions?.[0]?.message).toBe(
      'kubespray v2.30.0 is not installed on the worker (it has v2.31.0): pin one of those, or install it and add it to HOSTFLOW_KUBESPRAY_DIR',
    );
    expect((await events('Refused', 3)).map((e) => e.involvedObject.name).sort()).toEqual([
      'even',
      'pinned',
      'taken',
    ]);
    expect(await consumerOf(1)).toBe('alpha');
    expect([await consumerOf(0), await consumerOf(2)]).not.toContain('pinned');
    const keySecret = await scope.kube.core
      .readNamespacedSecret({ namespace: scope.namespace, name: 'cluster-pinned-ssh-key' })
      .then(() => 200, statusCode);
    expect(keySecret).toBe(404);
  });

  it('on delete, resets its hosts, releases them and removes what it made (the installer key as it recorded it), then goes', async () => {
    // A hostile tenant rewrites the installer key's public half to the admin's own key line, so
    // that taking "the installer key" back from the Secret would lock the platform out of its
    // hosts and leave the cluster's key there: the engine takes back the key it recorded.
    const adminKey = (await authorizedKeys(0)).split('\n').find((l) => l && l !== alphaKey)!;
    await scope.kube.core.patchNamespacedSecret(
      {
        name: 'cluster-alpha-ssh-key',
        namespace: scope.namespace,
        body: { stringData: { 'id_rsa.pub': `${adminKey}\n` } },
      },
      MERGE_PATCH,
    );
    for (const name of ['alpha', 'even', 'taken', 'pinned']) {
      await scope.kube.custom.deleteNamespacedCustomObject({
        ...PROVISIONING_API,
        namespace: scope.namespace,
        name,
      });
    }
    for (const name of ['alpha', 'even', 'taken', 'pinned']) {
      await waitFor(
        `${name} to go`,
        async () => ((await get(name)) === undefined ? true : undefined),
        {
          timeoutMs: 120_000,
        },
      );
    }
    expect([await marker(0), await marker(1), await marker(2)]).toEqual(['', '', '']);
    expect([await consumerOf(0), await consumerOf(1), await consumerOf(2)]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    // The hosts' next cluster finds no key of this one; the admin's own key is still there.
    for (const index of [0, 1, 2]) {
      const keys = await authorizedKeys(index);
      expect(keys.split('\n')).not.toContain(alphaKey);
      expect(keys.trim()).not.toBe('');
    }
    expect((await authorizedKeys(0)).split('\n')).toContain(adminKey);
    // The kubeconfig, and the installer key the hosts trusted: with it gone, nobody can use it.
    for (const name of ['cluster-alpha-kubeconfig', 'cluster-alpha-ssh-key']) {
      await expect(
        scope.kube.core.readNamespacedSecret({ name, namespace: scope.namespace }),
      ).rejects.toMatchObject({ code: 404 });
    }
  });

  it('names the host and the task when kubespray fails, and keeps its hosts', async () => {
    // The run is a Job: the failure is planted on the doomed node's host, where the stand-in
    // looks for it (/var/tmp/hostflow-stand-in-fail-at), and only there.
    const failAt = '/var/tmp/hostflow-stand-in-fail-at';
    await metal.pool.hosts[2]!.exec(['sh', '-c', `echo "Install kubelet" > ${failAt}`]);
    let status: ProvisioningStatus;
    try {
      await create('doomed', 'cluster-doomed', {
        masters: [{ master: { 'mac-address': macs[0]! } }],
        workers: [{ [DOOMED]: { 'mac-address': macs[2]! } }],
      });
      status = await phase('doomed', 'Failed');
    } finally {
      await metal.pool.hosts[2]!.exec(['rm', '-f', failAt]);
    }
    expect(status.install).toMatchObject({ failedHost: DOOMED, failedTask: 'Install kubelet' });
    expect(status.conditions?.[0]?.message).toMatch(
      new RegExp(`^kubespray cluster\\.yml failed on host ${DOOMED} at task "Install kubelet"`),
    );
    expect(await consumerOf(2)).toBe('doomed');
    expect(await events('InstallFailed', 1)).toHaveLength(1);
    // `kubectl get provisioning` says why in a short column; the long words are for -o wide.
    const columns = await printed('doomed');
    expect(Object.keys(columns)).toEqual([
      'Name',
      'Cluster',
      'Phase',
      'Reason',
      'Masters',
      'Workers',
      'Age',
    ]);
    expect(columns).toMatchObject({ Phase: 'Failed', Reason: 'InstallFailed' });
    expect(
      await foundBy(
        `HostflowKind = 'provisioning' AND K8sNamespace = '${scope.namespace}' AND Phase = 'Failed'`,
      ),
    ).toEqual([`provisioning/${scope.namespace}/doomed`]);
    await scope.kube.custom.deleteNamespacedCustomObject({
      ...PROVISIONING_API,
      namespace: scope.namespace,
      name: 'doomed',
    });
    await waitFor(
      'doomed to go',
      async () => ((await get('doomed')) === undefined ? true : undefined),
      {
        timeoutMs: 120_000,
      },
    );
    expect(await consumerOf(2)).toBeUndefined();
  });

  it('says a missing admin-key Secret is missing, naming it, not that it lacks id_rsa', async () => {
    const sshSecret = (secret: string) =>
      scope.kube.custom.patchNamespacedCustomObject(
        {
          ...BAREMETALHOST_API,
          namespace: metal3,
          name: 'node-1',
          body: { metadata: { annotations: { [HOST_SSH_ANNOTATIONS.secret]: secret } } },
        },
        MERGE_PATCH,
      );
    const { metadata } = (await scope.kube.custom.getNamespacedCustomObject({
      ...BAREMETALHOST_API,
      namespace: metal3,
      name: 'node-1',
    })) as { metadata: { annotations: Record<string, string> } };
    const given = metadata.annotations[HOST_SSH_ANNOTATIONS.secret]!;
    await sshSecret('no-such-secret');
    try {
      await create('keyless', 'cluster-keyless', {
        masters: [{ master: { 'mac-address': macs[1]! } }],
      });
      const status = await phase('keyless', 'Failed');
      expect(status.conditions?.[0]?.message).toContain(
        `node master: Secret ${metal3}/no-such-secret does not exist: create it with the admin key of its host under id_rsa`,
      );
      await scope.kube.custom.deleteNamespacedCustomObject({
        ...PROVISIONING_API,
        namespace: scope.namespace,
        name: 'keyless',
      });
      await waitFor(
        'keyless to go',
        async () => ((await get('keyless')) === undefined ? true : undefined),
        { timeoutMs: 120_000 },
      );
    } finally {
      await sshSecret(given);
    }
  });

  it('refused for want of a free host, goes on by itself once one frees up', async () => {
    await create('holder', 'cluster-holder', {
      masters: [{ master: { 'mac-address': macs[2]! } }],
    });
    await phase('holder', 'Ready');
    // The one 12-CPU host is the holder's: refused, saying so.
    await create('waiter', 'cluster-waiter', { masters: [{ big: { cpu: 12 } }] });
    const refused = await phase('waiter', 'Refused');
    expect(refused.conditions?.[0]?.message).toBe('master big: no free BareMetalHost has 12 CPUs');
    // The freed host is slow to install, until the file goes: the install is seen as it runs.
    const slow = '/var/tmp/hostflow-stand-in-slow';
    await metal.pool.hosts[2]!.exec(['sh', '-c', `echo 600 > ${slow}`]);
    try {
      await scope.kube.custom.deleteNamespacedCustomObject({
        ...PROVISIONING_API,
        namespace: scope.namespace,
        name: 'holder',
      });
      // Nobody touches the waiter: it looks again on its own, takes the freed host, and says so.
      const installing = await statusWhen(
        'waiter',
        'to install on the freed host',
        (status) => status.step === 'Run kubespray cluster.yml',
      );
      const tookIt = new RegExp(
        `^looked again \\(look \\d+ since it was refused for hosts that were not free\\) at the BareMetalHosts of namespace ${scope.namespace} \\(the Provisioning's own\\) and those matching HOSTFLOW_BAREMETAL_NAMESPACES on the worker \\(${metal3}\\): took BareMetalHost ${metal3}/node-2 for master big; installing cluster cluster-waiter$`,
      );
      // Its Ready condition no longer shows the refusal while it installs.
      expect(installing.conditions?.[0]).toMatchObject({
        type: 'Ready',
        status: 'False',
        reason: 'HostsFreed',
        message: expect.stringMatching(tookIt),
      });
      const freed = await events('HostsFreed', 1);
      expect(freed.map((e) => [e.type, e.involvedObject.name, e.message])).toEqual([
        ['Normal', 'waiter', expect.stringMatching(tookIt)],
      ]);
    } finally {
      await metal.pool.hosts[2]!.exec(['rm', '-f', slow]);
    }
    const ready = await statusWhen(
      'waiter',
      'to install once the holder let its host go',
      (status) => status.phase === 'Ready',
    );
    expect(ready.nodes?.map((n) => n.host)).toEqual([`${metal3}/node-2`]);
    expect(await consumerOf(2)).toBe('waiter');
    // However often it looked again, its refusal is one Event.
    const waiterRefused = (await events('Refused', 4)).filter(
      (e) => e.involvedObject.name === 'waiter',
    );
    expect(waiterRefused).toHaveLength(1);
    await scope.kube.custom.deleteNamespacedCustomObject({
      ...PROVISIONING_API,
      namespace: scope.namespace,
      name: 'waiter',
    });
    await waitFor(
      'waiter to go',
      async () => ((await get('waiter')) === undefined ? true : undefined),
      { timeoutMs: 120_000 },
    );
  }, 420_000);

  // A hostile tenant names, by MAC, hosts that are not its to take: none is touched.
  it('a hostile tenant: a host in another namespace, one a Metal3Machine consumes, and one metal3 is busy with are never taken', async () => {
    const other = `other-${sfx}`;
    await scope.kube.core.createNamespace({ body: { metadata: { name: other } } });
    const mac = (n: number) => `02:00:5e:${sfx.slice(0, 2)}:00:${String(n).padStart(2, '0')}`;
    const metal3Machine = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1',
      kind: 'Metal3Machine',
      namespace: metal3,
      name: 'tenant-b-worker',
    };
    const fakes = [
      { namespace: other, name: 'foreign', state: 'available' },
      // Cluster API's metal3 provider sets consumerRef before provisioning starts: while the
      // host is still available, only the foreign consumerRef says it is taken.
      { namespace: metal3, name: 'capi', state: 'available', consumerRef: metal3Machine },
      { namespace: metal3, name: 'busy-provisioning', state: 'provisioning' },
      { namespace: metal3, name: 'busy-provisioned', state: 'provisioned' },
      { namespace: metal3, name: 'busy-deprovisioning', state: 'deprovisioning' },
      { namespace: metal3, name: 'busy-unregistered', state: undefined },
    ];
    const bmh = (namespace: string, name: string) => ({ ...BAREMETALHOST_API, namespace, name });
    try {
      for (const [i, fake] of fakes.entries()) {
        const created = (await scope.kube.custom.createNamespacedCustomObject({
          ...BAREMETALHOST_API,
          namespace: fake.namespace,
          body: {
            apiVersion: 'metal3.io/v1alpha1',
            kind: 'BareMetalHost',
            metadata: { name: fake.name, annotations: { 'bpa.akraino.org/ssh-secret': 'x' } },
            spec: { online: true, ...(fake.consumerRef ? { consumerRef: fake.consumerRef } : {}) },
          },
        })) as Record<string, unknown>;
        await scope.kube.custom.replaceNamespacedCustomObjectStatus({
          ...bmh(fake.namespace, fake.name),
          body: {
            ...created,
            status: {
              ...(fake.state ? { provisioning: { state: fake.state } } : {}),
              hardware: {
                cpu: { count: 64 },
                ramMebibytes: 65536,
                nics: [{ name: 'eth0', mac: mac(i), ip: `192.0.2.${i + 10}` }],
              },
            },
          },
        });
      }
      // One Provisioning per attack, so that each is refused (or, without its fix, goes on to
      // claim and install) on its own.
      await create('reach', 'cluster-reach', { masters: [{ m: { 'mac-address': mac(0) } }] });
      await create('grab', 'cluster-grab', { masters: [{ m: { 'mac-address': mac(1) } }] });
      await create('busy', 'cluster-busy', {
        masters: [{ m: { 'mac-address': mac(2) } }],
        workers: [3, 4, 5].map((i) => ({ [`w${i}`]: { 'mac-address': mac(i) } })),
      });
      // Not found, and where it was not: only its own namespace and the allowed ones.
      expect(await decided('reach')).toEqual({
        phase: 'Refused',
        message:
          `master m: no BareMetalHost in the namespaces searched has a NIC with MAC ${mac(0)}; ` +
          `BareMetalHosts were looked for in namespace ${scope.namespace} (the Provisioning's own) ` +
          `and those matching HOSTFLOW_BAREMETAL_NAMESPACES on the worker (${metal3}): to use a ` +
          'host in another namespace, add that namespace to HOSTFLOW_BAREMETAL_NAMESPACES on the worker',
      });
      expect(await decided('grab')).toEqual({
        phase: 'Refused',
        message: `master m: MAC ${mac(1)} is BareMetalHost ${metal3}/capi, which is consumed by Metal3Machine ${metal3}/tenant-b-worker`,
      });
      const busy = await decided('busy');
      expect({ phase: busy.phase, problems: busy.message.split('; ') }).toEqual({
        phase: 'Refused',
        problems: [
          `master m: MAC ${mac(2)} is BareMetalHost ${metal3}/busy-provisioning, which is in metal3 provisioning state "provisioning", not available`,
          `worker w3: MAC ${mac(3)} is BareMetalHost ${metal3}/busy-provisioned, which is in metal3 provisioning state "provisioned", not available`,
          `worker w4: MAC ${mac(4)} is BareMetalHost ${metal3}/busy-deprovisioning, which is in metal3 provisioning state "deprovisioning", not available`,
          `worker w5: MAC ${mac(5)} is BareMetalHost ${metal3}/busy-unregistered, which has no metal3 provisioning state yet (the baremetal-operator has not registered and inspected it)`,
        ],
      });
      for (const fake of fakes) {
        const found = (await scope.kube.custom.getNamespacedCustomObject(
          bmh(fake.namespace, fake.name),
        )) as { spec?: { consumerRef?: unknown } };
        expect(found.spec?.consumerRef).toEqual(fake.consumerRef);
      }
      for (const name of ['reach', 'grab', 'busy']) {
        await scope.kube.custom.deleteNamespacedCustomObject({
          ...PROVISIONING_API,
          namespace: scope.namespace,
          name,
        });
        await waitFor(`${name} to go`, async () =>
          (await get(name)) === undefined ? true : undefined,
        );
      }
    } finally {
      for (const fake of fakes) {
        await scope.kube.custom
          .deleteNamespacedCustomObject(bmh(fake.namespace, fake.name))
          .catch(() => undefined);
      }
      await scope.kube.core.deleteNamespace({ name: other }).catch(() => undefined);
    }
  });

  it('refuses a BareMetalHost whose given host key (hostflow.dev/ssh-host-key) is malformed, naming the annotation', async () => {
    try {
      await annotate(1, 'ssh-ed25519 not-a-key');
      await create('badkey', 'cluster-badkey', {
        masters: [{ master: { 'mac-address': macs[1]! } }],
      });
      expect(await decided('badkey')).toEqual({
        phase: 'Refused',
        message: expect.stringContaining(
          `master master (BareMetalHost ${metal3}/node-1): annotation hostflow.dev/ssh-host-key: the key after "ssh-ed25519" is not base64`,
        ),
      });
      expect(await consumerOf(1)).toBeUndefined();
    } finally {
      // Gone before the next test, even when this one failed (it would hold node-1).
      await scope.kube.custom
        .deleteNamespacedCustomObject({
          ...PROVISIONING_API,
          namespace: scope.namespace,
          name: 'badkey',
        })
        .catch(() => undefined);
      await waitFor(
        'badkey to go',
        async () => ((await get('badkey')) === undefined ? true : undefined),
        { timeoutMs: 60_000 },
      );
      await annotate(1, undefined).catch(() => undefined);
    }
  });

  it('holds a BareMetalHost with a given host key to it: never trusted on first use, refused when another answers', async () => {
    const { core, custom } = scope.kube;
    const address = (i: number) => metal.pool.hosts[i]!.address;
    // Forget what the installs above trusted on first use: only the given keys may vouch now.
    const store = await readStore();
    if (store) {
      for (const i of [1, 2]) delete store.data?.[storeKey(`address.${address(i)}`)];
      await core.replaceNamespacedConfigMap({
        name: HOST_KEY_STORE_NAME,
        namespace: scope.engineNamespace,
        body: store,
      });
    }
    try {
      // node-1 is given its own key; node-2 another host's (reinstalled, or an impostor there).
      await annotate(1, `${metal.pool.hosts[1]!.hostPublicKey} given by the platform team`);
      await annotate(2, metal.pool.hosts[0]!.hostPublicKey);
      await create('given', 'cluster-given', {
        masters: [{ master: { 'mac-address': macs[1]! } }],
        workers: [{ 'worker-1': { 'mac-address': macs[2]! } }],
      });
      // Where it ends: Failed here (without the given key, it would be Ready, installed there).
      const status = await waitFor(
        'given to end',
        async () => {
          const found = (await get('given'))?.status;
          return ['Failed', 'Refused', 'Ready'].includes(found?.phase ?? '') ? found : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 200 },
      );
      const message = status.conditions?.[0]?.message ?? '';
      expect({ phase: status.phase, node2: await marker(2) }).toEqual({
        phase: 'Failed',
        node2: '',
      });
      expect(message).toMatch(
        new RegExp(
          `ssh host at ${address(2).replaceAll('.', '\\.')}:22 presented host key SHA256:\\S+ \\(ssh-ed25519\\), ` +
            `not the one annotation hostflow\\.dev/ssh-host-key on BareMetalHost ${metal3}/node-2 gives`,
        ),
      );
      expect(message).toContain(
        `put its new key in annotation hostflow.dev/ssh-host-key on BareMetalHost ${metal3}/node-2`,
      );
      // Neither host was trusted on first use: node-1 was checked against its given key.
      const records = (await readStore())?.data ?? {};
      expect([1, 2].map((i) => records[storeKey(`address.${address(i)}`)])).toEqual([
        undefined,
        undefined,
      ]);
      // node-2 got nothing: not the cluster's installer key, no playbook.
      const installer = await core.readNamespacedSecret({
        name: 'cluster-given-ssh-key',
        namespace: scope.namespace,
      });
      const givenKey = Buffer.from(installer.data!['id_rsa.pub']!, 'base64')
        .toString('utf8')
        .trim();
      expect((await authorizedKeys(1)).split('\n')).toContain(givenKey);
      expect((await authorizedKeys(2)).split('\n')).not.toContain(givenKey);
      expect([await marker(1), await marker(2)]).toEqual(['', '']);
      await custom.deleteNamespacedCustomObject({
        ...PROVISIONING_API,
        namespace: scope.namespace,
        name: 'given',
      });
      await waitFor('given to go', async () =>
        (await get('given')) === undefined ? true : undefined,
      );
      expect([await consumerOf(1), await consumerOf(2)]).toEqual([undefined, undefined]);
    } finally {
      for (const i of [1, 2]) await annotate(i, undefined).catch(() => undefined);
    }
  });

  // Last: it deletes the file's namespace, the one the bridge watches.
  it('goes with its namespace: the hosts reset and released, the namespace gone within a minute', async () => {
    const { namespace } = scope;
    await create('omega', 'cluster-omega', { masters: [{ master: { 'mac-address': macs[0]! } }] });
    await phase('omega', 'Ready');
    expect(await marker(0)).toBe('master in cluster-omega');
    await scope.kube.core.deleteNamespace({ name: namespace });
    // The namespace controller empties it; the Provisioning's finalizer holds it until the hosts
    // are reset and released, which happen outside it (the BareMetalHosts' namespace, the hosts).
    await waitFor(
      `namespace ${namespace} to go`,
      async () =>
        (await scope.kube.core.readNamespace({ name: namespace }).then(() => 200, statusCode)) ===
        404
          ? true
          : undefined,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(await consumerOf(0)).toBeUndefined();
    expect(await marker(0)).toBe('');
  });
});
