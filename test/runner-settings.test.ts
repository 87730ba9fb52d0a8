// The runner's settings as an operator writes them: the mirrors its runs may reach besides their
// nodes' sshd (HOSTFLOW_RUNNER_MIRRORS), taken into each run's NetworkPolicy, and refused at the
// worker's start, each bad entry named, when it cannot read them.
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runName, runNetworkPolicy, type RunRequest } from '../activities/runner/manifests.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { loadSettings, runnerSettings } from '../runtime/settings.js';

const run: RunRequest = {
  name: runName('runner-settings'),
  cluster: 'shop/cluster-a',
  what: 'kubespray cluster.yml',
  command: ['ansible-playbook', 'cluster.yml'],
  env: {},
  files: [],
  nodeAddresses: ['10.0.7.2', 'fd00:7::2'],
  deadlineSeconds: 60,
};

describe("the runner's mirrors", () => {
  it("let each run reach them, beside its own nodes' sshd, and nothing else", () => {
    const settings = runnerSettings(
      loadSettings({
        HOSTFLOW_RUNNER_IMAGE: 'localhost/hostflow-runner:1',
        HOSTFLOW_RUNNER_MIRRORS: '10.0.5.0/24:443, fd00:5::/64:80',
      }),
    )!;
    expect(settings.mirrors).toEqual([
      { cidr: '10.0.5.0/24', port: 443 },
      { cidr: 'fd00:5::/64', port: 80 },
    ]);
    expect(runNetworkPolicy(run, settings).spec).toEqual({
      podSelector: { matchLabels: { 'hostflow.dev/run': run.name } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [
        {
          // Each node by itself: an IPv6 node is one address too, not a /32 of them.
          to: [{ ipBlock: { cidr: '10.0.7.2/32' } }, { ipBlock: { cidr: 'fd00:7::2/128' } }],
          ports: [{ protocol: 'TCP', port: 22 }],
        },
        { to: [{ ipBlock: { cidr: '10.0.5.0/24' } }], ports: [{ protocol: 'TCP', port: 443 }] },
        { to: [{ ipBlock: { cidr: 'fd00:5::/64' } }], ports: [{ protocol: 'TCP', port: 80 }] },
      ],
    });
  });

  it('are none unless set', () => {
    const settings = runnerSettings(loadSettings({ HOSTFLOW_RUNNER_IMAGE: 'runner:1' }))!;
    expect(runNetworkPolicy(run, settings).spec!.egress).toHaveLength(1);
  });

  it('stop the worker at its start when it cannot read them, naming each one and the form it takes', async () => {
    const bad = ['10.0.5.0:443', '10.0.5.0/33:443', 'mirror.example/32:443', '10.0.5.0/24:0'];
    const started = promisify(execFile)(
      process.execPath,
      [join(REPO_ROOT, 'dist/workers/worker.js')],
      {
        env: {
          PATH: process.env.PATH,
          HOSTFLOW_RUNNER_MIRRORS: ['10.0.6.0/24:443', ...bad].join(','),
        },
        timeout: 30_000,
      },
    );
    const failed = (await started.then(
      () => ({ code: 0, stdout: '' }),
      (err: unknown) => err,
    )) as { code: number; stdout: string };
    expect(failed.code).toBe(1);
    // Its log line (JSON), one line of the message for each bad entry, the good one not among them.
    const { msg } = JSON.parse(failed.stdout.trim().split('\n').at(-1)!) as { msg: string };
    expect(msg.split('\n')).toEqual([
      'hostflow worker: invalid hostflow settings in the environment:',
      ...bad.map(
        (entry) =>
          `  HOSTFLOW_RUNNER_MIRRORS: "${entry}" is not a mirror; expected CIDR:port, ` +
          'comma-separated, e.g. 10.0.5.0/24:443',
      ),
    ]);
  });
});
