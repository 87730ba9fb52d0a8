// Real kubespray v2.31.0, unmodified (../shared/kubespray-v2.31.0, or HOSTFLOW_REAL_KUBESPRAY),
// run by the playbook activity against real sshd test hosts, on the runner image's ansible (from
// deploy/requirements-kubespray.txt), with the inventory and group vars hostflow
// renders for a Provisioning, each run a runner Job. Only what kubespray tags `always` runs (the
// activity's `tags`): its ansible version check, dynamic_groups, validate_inventory, and
// the facts over SSH with become. Past that line kubespray installs a container runtime and
// systemd units, which these hosts (this machine's kernel, no systemd) cannot take; there the
// stand-in takes over (local-stack/kubespray-stand-in, kubespray-run.test.ts).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MockActivityEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type KubesprayCheck,
  type PlaybookInput,
  type PlaybookOutcome,
} from '../activities/ansible/playbook.js';
import { createRunner } from '../activities/runner/job.js';
import { runName } from '../activities/runner/manifests.js';
import { REAL_KUBESPRAY, REPO_ROOT } from '../local-stack/paths.js';
import { RUNNER_ANSIBLE_CORE } from '../shared/runner-settings.js';
import { type SshHostPool } from '../local-stack/ssh-hosts.js';
import type { InventoryNode } from '../shared/inventory.js';
import { renderGroupVars } from '../workflows/provisioning/inventory.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';
import {
  INSTALLER_KEY_SECRET,
  playbookActivities,
  startKubesprayHosts,
  stopKubesprayHosts,
  testRunnerSettings,
} from './support/kubespray.js';

const sfx = uniqueSuffix();
const namespace = `kubespray-real-${sfx}`;
const workDir = join(testEnv('stateDir'), `clusters-real-${sfx}`);
let pool: SshHostPool;

const activitiesWith = (kubesprayDirs: string[]) =>
  playbookActivities(kubesprayDirs, workDir, namespace);
const activities = activitiesWith([REAL_KUBESPRAY]);

beforeAll(async () => {
  readFileSync(join(REAL_KUBESPRAY, 'galaxy.yml')); // a missing release fails here, saying where
  pool = await startKubesprayHosts({ count: 3, namespace, sfx });
}, 120_000);

afterAll(async () => {
  await stopKubesprayHosts(pool, namespace);
});

const node = (label: string, role: 'master' | 'worker', host: number): InventoryNode => ({
  label,
  roles: [role],
  ip: pool.hosts[host]!.address,
});
const oneEach = () => [node('master-1', 'master', 0), node('worker-1', 'worker', 1)];

const input = (
  cluster: string,
  nodes: InventoryNode[],
  extra: Partial<PlaybookInput> = {},
): PlaybookInput => ({
  namespace,
  cluster,
  playbook: 'cluster.yml',
  inventory: nodes,
  groupVars: renderGroupVars({ cluster, podSubnet: '10.244.0.0/16', plugins: ['multus'] }),
  sshUser: pool.hosts[0]!.adminUser,
  sshKeySecret: INSTALLER_KEY_SECRET,
  ...extra,
});

const run = (what: PlaybookInput) =>
  // Each run an activity of its own (and so a Job of its own), only kubespray's `always` tasks.
  new MockActivityEnvironment({ activityId: randomUUID() }).run(activities.runPlaybook, {
    ...what,
    tags: ['always'],
  }) as Promise<PlaybookOutcome>;

/** Each host got through every check kubespray made on it, facts included. */
function expectClean(outcome: PlaybookOutcome, hosts: string[]) {
  expect(Object.keys(outcome.recap).sort()).toEqual([...hosts].sort());
  for (const host of hosts) {
    expect(outcome.recap[host]).toMatchObject({ failed: 0, unreachable: 0 });
  }
}

describe('real kubespray v2.31.0 on the ansible hostflow installs', () => {
  it('cluster.yml: one master and one worker pass the version check, the inventory validation and the facts', async () => {
    const outcome = await run(input('one-each', oneEach()));
    expectClean(outcome, ['master-1', 'worker-1']);
    const log = readFileSync(outcome.log, 'utf8');
    expect(log).toContain('TASK [Check 2.18.0 <= Ansible version < 2.19.0]');
    expect(log).toContain('TASK [validate_inventory : Stop if even number of etcd hosts]');
    // Facts come from the hosts themselves, over SSH, with become.
    expect(log).toMatch(/TASK \[Gather minimal facts\][^]*ok: \[master-1\][^]*ok: \[worker-1\]/);
  });

  it('cluster.yml: three masters pass', async () => {
    const masters = [0, 1, 2].map((host) => node(`master-${host + 1}`, 'master', host));
    expectClean(await run(input('three', masters)), ['master-1', 'master-2', 'master-3']);
  });

  it('cluster.yml: kubespray itself refuses two masters (an even etcd), in its own words', async () => {
    const masters = [node('master-1', 'master', 0), node('master-2', 'master', 1)];
    await expect(run(input('two', masters))).rejects.toMatchObject({
      type: 'PlaybookFailed',
      message: expect.stringMatching(
        /^kubespray cluster\.yml failed on host master-1 at task "validate_inventory : Stop if even number of etcd hosts": Assertion failed \(log: /,
      ),
    });
  });

  it('scale.yml --limit: only the added worker is validated and gathered', async () => {
    const nodes = [...oneEach(), node('worker-2', 'worker', 2)];
    const outcome = await run(
      input('scaled', nodes, { playbook: 'scale.yml', limit: ['worker-2'] }),
    );
    expectClean(outcome, ['worker-2']);
  });

  it('remove-node.yml -e node=…: the node named is the one its plays target, after the validation and the facts', async () => {
    const nodes = [...oneEach(), node('worker-2', 'worker', 2)];
    const remove = (named: string) =>
      run(input('scaled', nodes, { playbook: 'remove-node.yml', limit: [named] }));
    const outcome = await remove('worker-2');
    expectClean(outcome, ['master-1', 'worker-1', 'worker-2']);
    const log = readFileSync(outcome.log, 'utf8');
    expect(log).toContain('PLAY [Confirm node removal]');
    expect(log).not.toContain('Could not match supplied host pattern, ignoring: worker-2');
    // kubespray's plays target the `node` variable: a name not in the inventory matches nothing.
    const unknown = await remove('worker-9');
    expect(readFileSync(unknown.log, 'utf8')).toContain(
      'Could not match supplied host pattern, ignoring: worker-9',
    );
  });

  it('reset.yml passes its validation on every node', async () => {
    const outcome = await run(input('one-each', oneEach(), { playbook: 'reset.yml' }));
    expectClean(outcome, ['master-1', 'worker-1']);
  });
});

describe('the kubespray release a Provisioning pins', () => {
  const check = (dirs: string[], release?: string) =>
    new MockActivityEnvironment().run(
      activitiesWith(dirs).checkKubespray,
      release ? { release } : {},
    ) as Promise<KubesprayCheck>;

  it('runs a release the worker has, with or without the v', async () => {
    await expect(check([REAL_KUBESPRAY])).resolves.toEqual({ release: '2.31.0' });
    await expect(check([REAL_KUBESPRAY], 'v2.31.0')).resolves.toEqual({ release: '2.31.0' });
    await expect(check([REAL_KUBESPRAY], '2.31.0')).resolves.toEqual({ release: '2.31.0' });
  });

  it('refuses a release the worker does not have, naming what it has', async () => {
    await expect(check([REAL_KUBESPRAY], 'v2.30.0')).resolves.toEqual({
      problem: expect.stringContaining(
        'kubespray v2.30.0 is not installed on the worker (it has v2.31.0)',
      ),
    });
  });

  it("checks each release against the runner image's own ansible-core, which the worker never runs", async () => {
    // The engine knows it from the image's build (the pin in its requirements), and this is it.
    const pins = readFileSync(join(REPO_ROOT, 'deploy/requirements-kubespray.txt'), 'utf8');
    expect(pins).toContain(`\nansible-core==${RUNNER_ANSIBLE_CORE}\n`);
    const lines: string[] = [];
    const end = await createRunner({ kc: kube().kc, settings: testRunnerSettings() }).run(
      {
        name: runName(randomUUID()),
        cluster: `${namespace}/ansible-version`,
        what: 'ansible-playbook --version',
        command: ['ansible-playbook', '--version'],
        env: {},
        files: [],
        nodeAddresses: [],
        deadlineSeconds: 60,
      },
      (line) => lines.push(line),
      new AbortController().signal,
    );
    expect(end.exitCode).toBe(0);
    expect(lines[0]).toBe(`ansible-playbook [core ${RUNNER_ANSIBLE_CORE}]`);
  });

  it('refuses a release made for another ansible-core, naming both versions, before any playbook runs', async () => {
    // A checkout as a later release would be, asking for ansible-core 2.19: only its release
    // name and its version play, which is all the check reads.
    const later = join(testEnv('stateDir'), `kubespray-2.32.0-${sfx}`);
    mkdirSync(join(later, 'playbooks'), { recursive: true });
    writeFileSync(join(later, 'galaxy.yml'), 'name: kubespray\nversion: 2.32.0\n');
    writeFileSync(join(later, 'cluster.yml'), '[]\n');
    writeFileSync(
      join(later, 'playbooks', 'ansible_version.yml'),
      '- hosts: all\n  vars:\n    minimal_ansible_version: 2.19.0\n    maximal_ansible_version: 2.20.0\n  tasks: []\n',
    );
    const { problem } = await check([REAL_KUBESPRAY, later], 'v2.32.0');
    expect(problem).toMatch(
      /^kubespray v2\.32\.0 needs ansible-core >= 2\.19\.0 and < 2\.20\.0, but the runner image runs ansible-core 2\.18\.\d+: /,
    );
    const refused = new MockActivityEnvironment().run(
      activitiesWith([REAL_KUBESPRAY, later]).runPlaybook,
      input('later', oneEach(), { kubesprayRelease: 'v2.32.0' }),
    );
    await expect(refused).rejects.toMatchObject({ type: 'KubesprayUnavailable' });
  });
});
