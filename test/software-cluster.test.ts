// Softwares and Clusters end to end: real bridge and worker processes, real SSH hosts registered
// as metal3 BareMetalHosts, real ansible-playbook. Two stand-ins, because these hosts share this
// machine's kernel and /usr: the project's kubespray playbooks (local-stack/kubespray-stand-in)
// install the cluster, and an apt-get stand-in (local-stack/apt-stand-in) installs the packages,
// answering and failing as apt-get does and keeping what each host has in the host's own /etc.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../local-stack/paths.js';
import { waitFor } from '../local-stack/process.js';
import { APT_STAND_IN_ON_HOST } from '../local-stack/ssh-hosts.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import {
  BPA_CLUSTER_API,
  PROVISIONING_API,
  SOFTWARE_API,
  type ProvisioningSpec,
  type SoftwareSpec,
} from '../shared/bpa-api.js';
import { statusCode } from '../shared/kube-errors.js';
import { registerBareMetalHosts, type BareMetalHosts } from './support/baremetal.js';
import { startBridge, startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { describeJson, hostflowOf, stepsOf } from './support/hostflow-cli.js';
import { kubesprayWorkerEnv } from './support/kubespray.js';
import { createScope, type TestScope } from './support/scope.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

const run = promisify(execFile);
const sfx = uniqueSuffix();
const workerEnv = {
  ...kubesprayWorkerEnv(sfx),
  HOSTFLOW_PACKAGE_MANAGER: APT_STAND_IN_ON_HOST,
};
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;

beforeAll(async () => {
  scope = await createScope('software');
  metal = await registerBareMetalHosts(scope, { count: 3, sfx });
  // Other test files register hosts too, in their own namespaces: these are this file's.
  worker = await startWorker(scope, {
    ...workerEnv,
    HOSTFLOW_BAREMETAL_NAMESPACE: metal.namespace,
  });
  bridge = await startBridge(scope);
}, 120_000);

afterAll(() => tearDown([bridge, worker], metal, scope));

type Api = typeof PROVISIONING_API | typeof SOFTWARE_API | typeof BPA_CLUSTER_API;
const KINDS = new Map<Api, string>([
  [PROVISIONING_API, 'Provisioning'],
  [SOFTWARE_API, 'Software'],
  [BPA_CLUSTER_API, 'Cluster'],
]);

interface Status {
  phase?: string;
  provisioning?: string;
  software?: string;
  nodes?: Array<{ label: string; ip: string; installed?: string[]; error?: string }>;
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

const create = (api: Api, name: string, spec: object, cluster?: string) =>
  scope.kube.custom.createNamespacedCustomObject({
    ...api,
    namespace: scope.namespace,
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: KINDS.get(api),
      metadata: { name, ...(cluster ? { labels: { cluster } } : {}) },
      spec,
    },
  });

const patchSpec = (api: Api, name: string, spec: object) =>
  scope.kube.custom.patchNamespacedCustomObject(
    { ...api, namespace: scope.namespace, name, body: { spec } },
    MERGE_PATCH,
  );

/** The status; undefined when the resource is gone. */
const status = (api: Api, name: string): Promise<Status | undefined> =>
  scope.kube.custom.getNamespacedCustomObject({ ...api, namespace: scope.namespace, name }).then(
    (found) => (found as { status?: Status }).status ?? {},
    (err: unknown) => (statusCode(err) === 404 ? undefined : Promise.reject(err)),
  );

const until = (api: Api, name: string, what: string, done: (s: Status) => boolean) =>
  waitFor(
    `${KINDS.get(api)} ${name}: ${what}`,
    async () => {
      const found = await status(api, name);
      return found && done(found) ? found : undefined;
    },
    { timeoutMs: 150_000, intervalMs: 250 },
  );

const gone = (api: Api, name: string) =>
  waitFor(
    `${KINDS.get(api)} ${name} to go`,
    async () => ((await status(api, name)) === undefined ? true : undefined),
    { timeoutMs: 150_000 },
  );

/** What the apt-get stand-in installed on host `index`: `name version` lines, sorted. */
const packagesOn = async (index: number) =>
  (await metal.pool.hosts[index]!.exec(['cat', '/etc/hostflow-stand-in/packages'])).stdout
    .split('\n')
    .filter(Boolean)
    .sort();

const hostflow = (...args: string[]) =>
  run(process.execPath, [join(REPO_ROOT, 'dist/cli/hostflow.js'), ...args], {
    env: { ...process.env, KUBECONFIG: testEnv('kubeconfig') },
  }).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (err: { code: number; stderr: string }) => ({ code: err.code, output: err.stderr }),
  );

const eventsOf = async (name: string, reason: string) =>
  (await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace })).items
    .filter((e) => e.involvedObject.name === name && e.reason === reason)
    .map((e) => e.message ?? '');

describe('a Software', () => {
  it('waits for its cluster, installs per role with pinned versions, names every package that fails on its node, installs them on a retry once they exist, and installs the difference on a change', async () => {
    const [mac0, mac1] = metal.macs;
    await create(
      SOFTWARE_API,
      'tools',
      {
        masterSoftware: ['htop', { curl: { version: '7.88.1-10' } }],
        workerSoftware: ['jq'],
      } satisfies SoftwareSpec,
      'sw-one',
    );
    const waiting = await until(
      SOFTWARE_API,
      'tools',
      'waiting',
      (s) => s.phase === 'WaitingForCluster',
    );
    expect(waiting.conditions?.[0]?.message).toBe(
      `no Provisioning in ${scope.namespace} has the label cluster=sw-one`,
    );

    await create(
      PROVISIONING_API,
      'one',
      {
        masters: [{ m1: { 'mac-address': mac0! } }],
        workers: [{ w1: { 'mac-address': mac1! } }],
      } satisfies ProvisioningSpec,
      'sw-one',
    );
    const installed = await until(
      SOFTWARE_API,
      'tools',
      'installed',
      (s) => s.phase === 'Installed',
    );
    expect(installed.nodes?.map(({ label, installed: has }) => ({ label, has }))).toEqual([
      { label: 'm1', has: ['curl=7.88.1-10', 'htop'] },
      { label: 'w1', has: ['jq'] },
    ]);
    // On the hosts themselves: the pinned version, the newest where none was pinned.
    expect(await packagesOn(0)).toEqual(['curl 7.88.1-10', 'htop 3.2.2-2']);
    expect(await packagesOn(1)).toEqual(['jq 1.7.1-3']);

    // Packages the repository does not have, and a version it does not have: that node fails,
    // naming every one of them as apt does (more than its last lines); nothing else reruns.
    await patchSpec(SOFTWARE_API, 'tools', {
      workerSoftware: [
        'jq',
        'nosuchpkg',
        'nosuchlib',
        'nosuchtool',
        { chrony: { version: '9.9-1' } },
      ],
    });
    const failed = await until(SOFTWARE_API, 'tools', 'failed', (s) => s.phase === 'Failed');
    const w1 = failed.nodes?.find((n) => n.label === 'w1');
    const [what, said] = w1?.error?.split(' (exit 100): ') ?? [];
    expect(what).toMatch(
      /^node w1 \(.*\): .* install chrony=9\.9-1 nosuchlib nosuchpkg nosuchtool failed$/,
    );
    expect(said?.split('; ')).toEqual([
      "E: Version '9.9-1' for 'chrony' was not found",
      'E: Unable to locate package nosuchlib',
      'E: Unable to locate package nosuchpkg',
      'E: Unable to locate package nosuchtool',
    ]);
    expect(failed.nodes?.find((n) => n.label === 'm1')?.error).toBeUndefined();
    expect(failed.conditions?.[0]).toMatchObject({ status: 'False', reason: 'InstallFailed' });
    expect(await eventsOf('tools', 'InstallFailed')).toEqual([w1?.error]);
    expect(await packagesOn(1)).toEqual(['jq 1.7.1-3']);

    // The repository gets the package; on-call asks for a retry: the worker installs it.
    await metal.pool.hosts[1]!.exec([
      'sh',
      '-c',
      'printf "%s\\n" "nosuchpkg 1.0-1" "nosuchlib 1.0-1" "nosuchtool 1.0-1" "chrony 9.9-1" >> /run/hostflow-host/apt-stand-in/catalog',
    ]);
    expect(await hostflow('retry', 'software', `${scope.namespace}/tools`)).toMatchObject({
      code: 0,
      output: expect.stringContaining(`asked Software ${scope.namespace}/tools to retry`),
    });
    const retried = await until(SOFTWARE_API, 'tools', 'retried', (s) => s.phase === 'Installed');
    const added = ['nosuchlib', 'nosuchpkg', 'nosuchtool'];
    expect(retried.nodes?.find((n) => n.label === 'w1')).toMatchObject({
      installed: ['chrony=9.9-1', 'jq', ...added],
    });
    const addedOn1 = added.map((name) => `${name} 1.0-1`);
    expect(await packagesOn(1)).toEqual(['chrony 9.9-1', 'jq 1.7.1-3', ...addedOn1]);

    // A change installs the difference, on the worker only.
    await patchSpec(SOFTWARE_API, 'tools', {
      workerSoftware: ['jq', { tmux: { version: '3.3a-3' } }],
    });
    const changed = await until(
      SOFTWARE_API,
      'tools',
      'installed again',
      (s) =>
        s.phase === 'Installed' && !!s.nodes?.some((n) => n.installed?.includes('tmux=3.3a-3')),
    );
    // Dropped from the list, a package stays (nothing is removed, as in the original).
    expect(changed.nodes?.find((n) => n.label === 'w1')?.installed).toEqual([
      'chrony=9.9-1',
      'jq',
      ...added,
      'tmux=3.3a-3',
    ]);
    expect(await packagesOn(1)).toEqual(['chrony 9.9-1', 'jq 1.7.1-3', ...addedOn1, 'tmux 3.3a-3']);
    expect(await packagesOn(0)).toEqual(['curl 7.88.1-10', 'htop 3.2.2-2']);

    await scope.kube.custom.deleteNamespacedCustomObject({
      ...SOFTWARE_API,
      namespace: scope.namespace,
      name: 'tools',
    });
    await scope.kube.custom.deleteNamespacedCustomObject({
      ...PROVISIONING_API,
      namespace: scope.namespace,
      name: 'one',
    });
    await gone(PROVISIONING_API, 'one');
  });

  it('refuses lists that are not packages, naming the entry, before anything runs', async () => {
    await create(
      SOFTWARE_API,
      'bad',
      {
        masterSoftware: ['htop', 'htop; rm -rf /'],
        workerSoftware: [{ curl: { version: '1.0 && reboot' } }],
      },
      'sw-one',
    );
    const refused = await until(SOFTWARE_API, 'bad', 'refused', (s) => s.phase === 'Refused');
    expect(refused.conditions?.[0]?.message).toBe(
      'masterSoftware[1]: "htop; rm -rf /" is not a package name (lower case letters, digits, + - .); ' +
        'workerSoftware[0]: curl: "1.0 && reboot" is not a package version',
    );
    // The Event is recorded beside the status, and may show a moment after it: one, not two.
    const events = await waitFor('its Refused Event', async () => {
      const found = await eventsOf('bad', 'Refused');
      return found.length > 0 ? found : undefined;
    });
    expect(events).toHaveLength(1);
  });
});

describe('a Cluster', () => {
  it('runs its Provisioning and Software as child workflows and aggregates their status', async () => {
    await create(BPA_CLUSTER_API, 'edge', {
      provisioningCR: 'edge-hosts',
      softwareCR: 'edge-tools',
    });
    const waiting = await until(BPA_CLUSTER_API, 'edge', 'waiting', (s) => s.phase === 'Waiting');
    expect(waiting).toMatchObject({ provisioning: 'Missing', software: 'Missing' });

    await create(
      PROVISIONING_API,
      'edge-hosts',
      { masters: [{ solo: { 'mac-address': metal.macs[2]! } }] },
      'edge',
    );
    await create(
      SOFTWARE_API,
      'edge-tools',
      { masterSoftware: ['chrony'], workerSoftware: ['ethtool'] },
      'edge',
    );
    const ready = await until(BPA_CLUSTER_API, 'edge', 'ready', (s) => s.phase === 'Ready');
    expect(ready).toMatchObject({ provisioning: 'Ready', software: 'Installed' });
    expect(ready.conditions?.map((c) => [c.type, c.status])).toEqual([
      ['Ready', 'True'],
      ['ProvisioningReady', 'True'],
      ['SoftwareReady', 'True'],
    ]);
    // No workers: the master works too, and gets both lists.
    expect(await packagesOn(2)).toEqual(['chrony 4.3-2', 'ethtool 6.1-1']);

    // Operators find both under the Cluster's workflow.
    const parent = WORKFLOW_ID.bpaCluster(scope.namespace, 'edge');
    for (const child of [
      WORKFLOW_ID.provisioning(scope.namespace, 'edge-hosts'),
      WORKFLOW_ID.software(scope.namespace, 'edge-tools'),
    ]) {
      const described = await scope.temporal.client.workflow.getHandle(child).describe();
      expect(described.parentExecution?.workflowId).toBe(parent);
    }
  });

  it('hostflow describe cluster: its members and their phases, its child workflows', async () => {
    const d = await describeJson(scope, 'cluster', `${scope.namespace}/edge`);
    expect(d).toMatchObject({
      kind: 'Cluster',
      object: `${scope.namespace}/edge`,
      workflowId: WORKFLOW_ID.bpaCluster(scope.namespace, 'edge'),
      status: 'RUNNING',
      phase: 'Ready',
      phaseFrom: 'object',
      facts: { provisioning: 'edge-hosts (Ready)', software: 'edge-tools (Installed)' },
      error: null,
      notes: [],
    });
    expect(d.details).toMatch(new RegExp(`^\\*\\*Cluster ${scope.namespace}/edge\\*\\*: Ready`));
    expect(stepsOf(d)).toEqual(
      expect.arrayContaining([
        'local activity addClusterFinalizer completed',
        'child workflow provisioningWorkflow running',
        'child workflow softwareWorkflow running',
        'signal bpaClusterObserved',
      ]),
    );
  });

  it('hostflow describe provisioning: its cluster, its hosts and the kubespray run', async () => {
    const d = await describeJson(scope, 'provisioning', `${scope.namespace}/edge-hosts`);
    expect(d).toMatchObject({
      kind: 'Provisioning',
      workflowId: WORKFLOW_ID.provisioning(scope.namespace, 'edge-hosts'),
      status: 'RUNNING',
      phase: 'Ready',
      facts: { cluster: 'edge', step: 'Installed', failedStep: null },
    });
    expect(d.facts.hosts).toEqual([expect.stringMatching(/^solo: \S+ \S+ \(master/)]);
    expect(stepsOf(d)).toEqual(
      expect.arrayContaining([
        'local activity claimBareMetalHosts completed',
        'activity runPlaybook completed',
        'local activity writeProvisioningStatus completed',
      ]),
    );
    // Ready, and waiting for nothing but the next change.
    expect(d.waiting.filter((w) => w.startsWith('activity'))).toEqual([]);
  });

  it('hostflow describe software: its nodes and what was installed on each', async () => {
    const d = await describeJson(scope, 'sw', `${scope.namespace}/edge-tools`);
    expect(d).toMatchObject({
      kind: 'Software',
      workflowId: WORKFLOW_ID.software(scope.namespace, 'edge-tools'),
      phase: 'Installed',
      facts: {
        cluster: 'edge',
        nodes: [expect.stringMatching(/^solo \S+: installed chrony, ethtool$/)],
      },
    });
    expect(d.timeline).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'activity',
          name: 'installPackages',
          text: 'install chrony ethtool on solo',
          outcome: 'completed',
        }),
      ]),
    );
    // The text form: the same facts, one node a line.
    const { stdout } = await hostflowOf(
      scope,
      'describe',
      'software',
      `${scope.namespace}/edge-tools`,
    );
    expect(stdout).toMatch(new RegExp(`^Software: +${scope.namespace}/edge-tools$`, 'm'));
    expect(stdout).toMatch(/^Phase: +Installed$/m);
    expect(stdout).toMatch(/^Nodes: +solo \S+: installed chrony, ethtool$/m);
    expect(stdout).toMatch(/install chrony ethtool on solo \[installPackages\] — done/);
    expect(stdout).toMatch(/^Last error: none$/m);
  });

  it('deleting it cleans both up', async () => {
    await scope.kube.custom.deleteNamespacedCustomObject({
      ...BPA_CLUSTER_API,
      namespace: scope.namespace,
      name: 'edge',
    });
    await gone(BPA_CLUSTER_API, 'edge');
    expect(await status(PROVISIONING_API, 'edge-hosts')).toBeUndefined();
    expect(await status(SOFTWARE_API, 'edge-tools')).toBeUndefined();
    expect(await metal.consumerOf(2)).toBeUndefined();
    expect(await metal.marker(2)).toBe('');
  });
});
