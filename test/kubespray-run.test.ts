// The kubespray run activity against real SSH hosts with real ansible-playbook. The playbooks are
// the project's stand-in for kubespray (local-stack/kubespray-stand-in): real kubespray cannot
// install Kubernetes on hosts that share this machine's kernel and have no systemd (it runs here up
// to its facts, in kubespray-real.test.ts, and this stand-in goes on from there). They connect
// to every host with become, validate the inventory as kubespray does, and write
// /etc/kubernetes/admin.conf on the first control plane. Each run is a runner Job on the suite's
// local kubelet. The activity runs under Temporal's activity test environment.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ApplicationFailure } from '@temporalio/common';
import { HOST_KEY_STORE_NAME, storeKey } from '../activities/kubernetes/host-key-store.js';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type PlaybookInput, type PlaybookOutcome } from '../activities/ansible/playbook.js';
import { KUBECONFIG_KEY } from '../activities/kubernetes/kubeconfig-secret.js';
import { KUBESPRAY_STAND_IN } from '../local-stack/kubespray-overlay.js';
import { type SshHostPool } from '../local-stack/ssh-hosts.js';
import { renderGroupVars } from '../workflows/provisioning/inventory.js';
import { runnerSelector } from './support/runner-jobs.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';
import {
  INSTALLER_KEY_SECRET,
  playbookActivities,
  startKubesprayHosts,
  stopKubesprayHosts,
} from './support/kubespray.js';

const { core } = kube();
const sfx = uniqueSuffix();
const namespace = `kubespray-${sfx}`;
const workDir = join(testEnv('stateDir'), `clusters-${sfx}`);
let pool: SshHostPool;

const activities = playbookActivities([KUBESPRAY_STAND_IN], workDir, namespace);
/** Each run an activity of its own, as Temporal gives each its own id (and so its own Job). */
const activity = () => new MockActivityEnvironment({ activityId: randomUUID() });

beforeAll(async () => {
  pool = await startKubesprayHosts({ count: 3, namespace, sfx });
}, 120_000);

afterAll(() => stopKubesprayHosts(pool, namespace));

const [m, w1, w2] = [0, 1, 2];
const nodes = () => [
  { label: 'master', roles: ['master' as const], ip: pool.hosts[m]!.address },
  { label: 'worker-1', roles: ['worker' as const], ip: pool.hosts[w1]!.address },
  { label: 'worker-2', roles: ['worker' as const], ip: pool.hosts[w2]!.address },
];

const input = (cluster: string, extra: Partial<PlaybookInput> = {}): PlaybookInput => ({
  namespace,
  cluster,
  playbook: 'cluster.yml',
  inventory: nodes(),
  groupVars: renderGroupVars({ cluster }),
  sshUser: pool.hosts[0]!.adminUser,
  sshKeySecret: INSTALLER_KEY_SECRET,
  controlPlaneIp: pool.hosts[m]!.address,
  // No Provisioning here: the kubeconfig Secret is marked for this stand-in uid.
  owner: { namespace, name: cluster, uid: `kubespray-run-${cluster}` },
  ...extra,
});

/**
 * Runs `run` with what a worker has in its environment (runtime/settings.ts, the cloud SDKs' own
 * variables) set in this process, whose environment the activity's ansible-playbook would inherit.
 */
async function withWorkerCredentials<T>(run: () => Promise<T>): Promise<T> {
  const credentials: Record<string, string> = {
    KUBECONFIG: testEnv('kubeconfig'),
    TEMPORAL_API_KEY: 'test-temporal-api-key',
    TEMPORAL_TLS_CLIENT_CERT_PATH: '/var/run/temporal/tls.crt',
    TEMPORAL_TLS_CLIENT_KEY_PATH: '/var/run/temporal/tls.key',
    AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'not-a-real-one',
    IBMCLOUD_API_KEY: 'not-a-real-one',
    HOSTFLOW_OTP_STORE_TOKEN_FILE: '/var/run/hostflow-otp/store-token',
  };
  const before = Object.fromEntries(Object.keys(credentials).map((k) => [k, process.env[k]]));
  Object.assign(process.env, credentials);
  try {
    return await run();
  } finally {
    for (const [name, value] of Object.entries(before))
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  }
}

const marker = async (host: number) =>
  (await pool.hosts[host]!.exec(['cat', '/var/tmp/hostflow-stand-in-kubelet'])).stdout.trim();

describe('a kubespray run', () => {
  it('installs every node, keeps the log, and stores the kubeconfig with the control plane as server', async () => {
    const env = activity();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (details) => heartbeats.push(details));
    const outcome = (await withWorkerCredentials(() =>
      env.run(activities.runPlaybook, input('alpha')),
    )) as PlaybookOutcome;
    expect(Object.keys(outcome.recap).sort()).toEqual([
      'localhost',
      'master',
      'worker-1',
      'worker-2',
    ]);
    for (const host of ['master', 'worker-1', 'worker-2']) {
      expect(outcome.recap[host]).toMatchObject({ failed: 0, unreachable: 0 });
    }
    expect(await marker(w2)).toBe('worker-2 in alpha');
    expect(heartbeats).toContain('play "Prepare the nodes", task "Install kubelet"');
    expect(readFileSync(outcome.log, 'utf8')).toContain('PLAY RECAP');
    // The worker keeps its copy of the log and nothing else; the run's Job and bundle are gone.
    expect(readdirSync(join(workDir, '.logs', namespace, 'alpha'))).toEqual([
      outcome.log.split('/').pop(),
    ]);
    // Its own: other test files run theirs in the same namespace meanwhile.
    const runs = await kube().batch.listNamespacedJob({
      namespace: 'hostflow-runners',
      labelSelector: runnerSelector(`${namespace}/alpha`),
    });
    expect(runs.items.filter((job) => !job.metadata?.deletionTimestamp)).toEqual([]);

    expect(outcome.kubeconfigSecret).toBe('alpha-kubeconfig');
    const secret = await core.readNamespacedSecret({ name: 'alpha-kubeconfig', namespace });
    const kubeconfig = Buffer.from(secret.data![KUBECONFIG_KEY]!, 'base64').toString('utf8');
    expect(kubeconfig).toContain(`server: https://${pool.hosts[m]!.address}:6443`);
    expect(secret.metadata?.labels?.cluster).toBe('alpha');
  });

  it("gives ansible none of the worker's credentials: controller-side code sees none of them", async () => {
    // The run above had them set in the worker; the stand-in recorded, on the first control plane,
    // the names its lookups saw in the runner.
    const seen = (
      await pool.hosts[m]!.exec(['cat', '/var/tmp/hostflow-stand-in-controller-environment'])
    ).stdout
      .split('\n')
      .filter(Boolean);
    expect(seen).toContain('PATH');
    const credential =
      /^(KUBECONFIG|TEMPORAL_|AWS_|IBM|HOSTFLOW_(?!INVENTORY$|SSH_CONFIG$|EXTRA_VARS$))/;
    expect(seen.filter((name) => credential.test(name))).toEqual([]);
  });

  it('names the host and the task that failed', async () => {
    const failAt = '/var/tmp/hostflow-stand-in-fail-at';
    await pool.hosts[w2]!.exec(['sh', '-c', `echo "Install kubelet" > ${failAt}`]);
    try {
      await expect(activity().run(activities.runPlaybook, input('beta'))).rejects.toMatchObject({
        type: 'PlaybookFailed',
        nonRetryable: true,
        message: expect.stringMatching(
          /^kubespray cluster\.yml failed on host worker-2 at task "Install kubelet": .*\(log: .*cluster\.[0-9a-f]{8}\.log\)$/,
        ),
      });
    } finally {
      await pool.hosts[w2]!.exec(['rm', '-f', failAt]);
    }
  });

  it("refuses an even etcd count, as kubespray's inventory validation does", async () => {
    const twoMasters = nodes().map((node) => ({ ...node, roles: ['master' as const] }));
    await expect(
      activity().run(activities.runPlaybook, input('gamma', { inventory: twoMasters.slice(0, 2) })),
    ).rejects.toMatchObject({
      message: expect.stringContaining(
        'failed on host localhost at task "Stop if even number of etcd hosts"',
      ),
    });
  });

  it('never runs twice at once for one cluster', async () => {
    const runs = await Promise.allSettled([
      activity().run(activities.runPlaybook, input('delta')),
      activity().run(activities.runPlaybook, input('delta')),
    ]);
    const refused = runs.filter((run) => run.status === 'rejected');
    expect(runs.filter((run) => run.status === 'fulfilled')).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({
      type: 'PlaybookBusy',
      nonRetryable: false,
    });
  });

  it('removes just the named node, and scales it back in with --limit', async () => {
    const run = (extra: Partial<PlaybookInput>) =>
      activity().run(activities.runPlaybook, input('delta', extra));
    // The hosts are delta's, as the test before left them.
    await run({ playbook: 'remove-node.yml', limit: ['worker-2'] });
    expect([await marker(m), await marker(w1), await marker(w2)]).toEqual([
      'master in delta',
      'worker-1 in delta',
      '',
    ]);
    const scaled = (await run({ playbook: 'scale.yml', limit: ['worker-2'] })) as PlaybookOutcome;
    expect(Object.keys(scaled.recap)).toEqual(['worker-2']);
    expect(await marker(w2)).toBe('worker-2 in delta');
  });

  it('reports what is wrong on a node in its words, naming the node', async () => {
    await pool.hosts[w1]!.exec([
      'sh',
      '-c',
      'echo "disk /dev/sdb is read-only" > /var/tmp/hostflow-stand-in-broken',
    ]);
    try {
      await expect(activity().run(activities.runPlaybook, input('epsilon'))).rejects.toMatchObject({
        message: expect.stringMatching(
          /^kubespray cluster\.yml failed on host worker-1 at task "Check the node": disk \/dev\/sdb is read-only/,
        ),
      });
    } finally {
      await pool.hosts[w1]!.exec(['rm', '-f', '/var/tmp/hostflow-stand-in-broken']);
    }
  });

  it('resets every node', async () => {
    await activity().run(activities.runPlaybook, input('alpha', { playbook: 'reset.yml' }));
    for (const host of [m, w1, w2]) expect(await marker(host)).toBe('');
  });
});

describe('host keys (issue 24 item 2)', () => {
  it('held the runs above to the keys recorded on first use, and refuses a host whose key changed', async () => {
    // every run above checked each node's key before ansible ran: recorded once, with a Warning
    const recorded = await core.readNamespacedConfigMap({ name: HOST_KEY_STORE_NAME, namespace });
    for (const host of pool.hosts) {
      expect(recorded.data?.[storeKey(`address.${host.address}`)]).toBe(host.hostPublicKey);
    }
    const warnings = (await core.listNamespacedEvent({ namespace })).items.filter(
      (e) => e.reason === 'HostKeyTrustedOnFirstUse',
    );
    expect(warnings).toHaveLength(pool.hosts.length);

    await pool.hosts[w2]!.swapHostKey();
    const refused = await activity()
      .run(activities.runPlaybook, input('zeta'))
      .catch((err: unknown) => err as ApplicationFailure);
    expect(refused).toMatchObject({ type: 'SshHostKeyMismatch', nonRetryable: true });
    expect((refused as ApplicationFailure).message).toMatch(
      new RegExp(
        `^node worker-2: ssh host at ${pool.hosts[w2]!.address.replaceAll('.', '\\.')}:22 presented host key ` +
          'SHA256:\\S+ \\(ssh-ed25519\\), not the one hostflow recorded on first use',
      ),
    );
    expect((refused as ApplicationFailure).message).toContain('no playbook runs against it');
    // nothing ran anywhere: the nodes are as the reset left them
    for (const host of [m, w1, w2]) expect(await marker(host)).toBe('');
  });
});
