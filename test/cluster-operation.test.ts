// ClusterOperations end to end: real bridge and worker processes, a Provisioning installed on real
// SSH hosts registered as metal3 BareMetalHosts, real ansible-playbook, real Locks enforced. The
// playbooks are the project's stand-in for kubespray (local-stack/kubespray-stand-in), laid over
// the real release so kubespray's own checks run first: real kubespray cannot upgrade Kubernetes on
// hosts that share this machine's kernel and have no systemd. The stand-in's upgrade-cluster.yml
// writes each node's version marker, batch by batch. A file on a host breaks or slows that node.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { REPO_ROOT } from '../local-stack/paths.js';
import { waitFor } from '../local-stack/process.js';
import { LOCKABLE_LABEL } from '../locks/api.js';
import { PROVISIONING_API, RETRY_ANNOTATION } from '../shared/bpa-api.js';
import { CLUSTER_OPERATION_API } from '../shared/cluster-operation-api.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';
import { registerBareMetalHosts, type BareMetalHosts } from './support/baremetal.js';
import { watchRunnerJobs } from './support/runner-jobs.js';
import { startBridge, startWorker, type EngineProcess, tearDown } from './support/engine.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';
import { clusterOperations, installCluster } from './support/cluster-operations.js';
import { describeJson, hostflowOf } from './support/hostflow-cli.js';
import { kubesprayWorkerEnv } from './support/kubespray.js';
import { answer } from './support/refusals.js';
import { createScope, type TestScope } from './support/scope.js';
import { tenantIdentity } from './support/service-account.js';

const run = promisify(execFile);
const sfx = uniqueSuffix();
const CLUSTER = 'cluster-ops';
let scope: TestScope;
let metal: BareMetalHosts;
let worker: EngineProcess;
let bridge: EngineProcess;
let ops: ReturnType<typeof clusterOperations>;
const workerEnv = () => ({
  ...kubesprayWorkerEnv(sfx),
  HOSTFLOW_BAREMETAL_NAMESPACES: metal.namespace,
});
/** A person who may edit Provisionings in the test's namespace (Locks apply to people). */
let clusterAdmin: CustomObjectsApi;

beforeAll(async () => {
  scope = await createScope('clop');
  metal = await registerBareMetalHosts(scope, { count: 2, sfx, lockable: true });
  await scope.kube.core.patchNamespace(
    {
      name: scope.namespace,
      body: { metadata: { labels: { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value } } },
    },
    MERGE_PATCH,
  );
  const { kc } = kube();
  clusterAdmin = (
    await tenantIdentity(kc as KubeConfig, scope.namespace, [
      { apiGroups: [PROVISIONING_API.group], resources: [PROVISIONING_API.plural], verbs: ['*'] },
    ])
  ).makeApiClient(CustomObjectsApi);
  worker = await startWorker(scope, workerEnv());
  bridge = await startBridge(scope);
  await installCluster(scope, metal, { name: 'ops', cluster: CLUSTER, workers: [1] });
  ops = clusterOperations(scope, metal, { name: 'ops', cluster: CLUSTER });
}, 240_000);

afterAll(() => tearDown([bridge, worker], metal, scope));

/** `hostflow describe operation <ns>/<name>` as on-call reads it; it must succeed. */
async function described(name: string): Promise<string> {
  const result = await hostflowOf(scope, 'describe', 'operation', `${scope.namespace}/${name}`);
  expect(result.code).toBe(0);
  return result.stdout;
}

const TIME = '\\d\\d:\\d\\d:\\d\\d';

describe('a ClusterOperation', () => {
  it('upgrades the cluster: its hooks and action in order, and the version before and after', async () => {
    expect(await ops.versions()).toEqual(['', '']);
    await ops.operate('upgrade-1', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: '1.35.1' },
      preHook: [{ action: 'cluster.yml' }],
      postHook: [{ action: 'scale.yml' }],
    });
    const done = await ops.ended('upgrade-1');
    expect(done).toMatchObject({ phase: 'Succeeded', currentStep: 'postHook[0]' });
    expect(done.steps!.map((s) => [s.name, s.action, s.phase])).toEqual([
      ['preHook[0]', 'cluster.yml', 'Succeeded'],
      ['action', 'upgrade-cluster.yml', 'Succeeded'],
      ['postHook[0]', 'scale.yml', 'Succeeded'],
    ]);
    expect(done.steps![1]!.log).toMatch(/upgrade-cluster\.[0-9a-f]+\.log$/);
    expect(await ops.versions()).toEqual(['1.35.1', '1.35.1']);
    expect(await ops.noted('upgrade-1')).toMatchObject({
      phase: 'Ready',
      kubeVersion: '1.35.1',
      lastOperation: {
        name: 'upgrade-1',
        phase: 'Succeeded',
        kubeVersionBefore: 'as installed',
        kubeVersionAfter: '1.35.1',
      },
    });
    // On-call finds it by cluster, action and phase: its own workflow, which the bridge started.
    const query =
      `HostflowKind = 'cluster-operation' AND ClusterName = '${CLUSTER}' AND ` +
      `Action = 'upgrade-cluster.yml' AND Phase = 'Succeeded'`;
    const found = await waitFor(`a workflow where ${query}`, async () => {
      const runs = [];
      for await (const w of scope.temporal.client.workflow.list({ query })) runs.push(w);
      return runs.length ? runs : undefined;
    });
    expect(found.map((w) => [w.workflowId, w.parentExecution?.workflowId])).toEqual([
      [`cluster-operation/${scope.namespace}/upgrade-1`, undefined],
    ]);
    // On-call's view through the CLI, by kubectl's short name too: its steps in order, with times.
    const d = await describeJson(scope, 'clusterop', `${scope.namespace}/upgrade-1`);
    expect(d).toMatchObject({
      kind: 'ClusterOperation',
      workflowId: `cluster-operation/${scope.namespace}/upgrade-1`,
      status: 'COMPLETED',
      phase: 'Succeeded',
      facts: {
        provisioning: 'ops',
        cluster: CLUSTER,
        action: 'upgrade-cluster.yml',
        message: done.message,
        failedStep: null,
      },
    });
    const text = await described('upgrade-1');
    // Each host's tasks, as ansible's recap counted them (a play on localhost counts too).
    const step = (name: string, action: string) =>
      `${name} ${action}: Succeeded ${TIME} → ${TIME} \\([^)]+\\)` +
      '(?:; localhost \\d+ ok, 0 changed)?; master \\d+ ok, \\d+ changed; worker \\d+ ok, \\d+ changed';
    expect(text).toMatch(
      new RegExp(
        `^Steps: +${step('preHook\\[0\\]', 'cluster\\.yml')}\n +${step('action', 'upgrade-cluster\\.yml')}` +
          `\n +${step('postHook\\[0\\]', 'scale\\.yml')}$`,
        'm',
      ),
    );
    // The history's timeline shows the same steps as activities, each with its summary.
    const ran = [...text.matchAll(/^ .* (\S+): kubespray (\S+) on cluster .* — done in /gm)];
    expect(ran.map((m) => `${m[1]} ${m[2]}`)).toEqual([
      'preHook[0] cluster.yml',
      'action upgrade-cluster.yml',
      'postHook[0] scale.yml',
    ]);
    // One the bridge never saw has no workflow: describe says why there may be none.
    const ghost = await hostflowOf(scope, 'describe', 'operation', `${scope.namespace}/ghost`);
    expect(ghost.code).toBe(1);
    expect(ghost.stderr).toContain(
      `no workflow cluster-operation/${scope.namespace}/ghost for ClusterOperation ` +
        `${scope.namespace}/ghost`,
    );
    expect(ghost.stderr).toContain(
      'The bridge starts it at the first event of the ClusterOperation',
    );
  }, 180_000);

  it('stops at a failed pre-hook: the action never runs, a post-hook marked always does', async () => {
    await ops.withFault(1, 'broken', 'disk /dev/sdb is read-only', async () => {
      await ops.operate('upgrade-2', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.2' },
        preHook: [{ action: 'cluster.yml' }],
        postHook: [{ action: 'scale.yml' }, { action: 'cluster.yml', always: true }],
      });
      const done = await ops.ended('upgrade-2');
      expect(done.steps!.map((s) => [s.name, s.phase])).toEqual([
        ['preHook[0]', 'Failed'],
        ['action', 'Skipped'],
        ['postHook[0]', 'Skipped'],
        ['postHook[1]', 'Failed'], // ran, and met the same broken node
      ]);
      // The first failure is the operation's: which step, host and task, and where the log is.
      expect(done).toMatchObject({
        phase: 'Failed',
        failedStep: 'preHook[0]',
        failedHost: 'worker',
        failedTask: 'Check the node',
      });
      expect(done.message).toContain('disk /dev/sdb is read-only');
      expect(done.log).toMatch(/cluster\.[0-9a-f]+\.log$/);
      // describe tells on-call the same: each step's phase, and where the failure was.
      const text = await described('upgrade-2');
      for (const line of [
        /^Phase: +Failed$/,
        /^Failed step: +preHook\[0\]$/,
        /^Failed host: +worker$/,
        /^Failed task: +Check the node$/,
        new RegExp(`^Log: +${done.log!.replace(/[/.]/g, '\\$&')}$`),
        new RegExp(`^Steps: +preHook\\[0\\] cluster\\.yml: Failed ${TIME} → .*read-only`),
        /^ +action upgrade-cluster\.yml: Skipped$/,
        /^ +postHook\[0\] scale\.yml: Skipped$/,
        /^ +postHook\[1\] cluster\.yml: Failed .*read-only/,
      ])
        expect(text).toMatch(new RegExp(line.source, 'm'));
      expect(await ops.versions()).toEqual(['1.35.1', '1.35.1']);
      expect((await ops.noted('upgrade-2')).lastOperation).toMatchObject({ phase: 'Failed' });
    });
  }, 180_000);

  it('runs one at a time in creation order, with the Provisioning locked while one runs', async () => {
    await ops.withFault(0, 'slow', '4', async () => {
      const upgradeTo = (name: string, kube_version: string) =>
        ops.operate(name, { action: 'upgrade-cluster.yml', extraVars: { kube_version } });
      // The line orders those that asked for a turn: the first has its turn before the others
      // are created (docs/provisionings.md), and these two may ask in either order.
      await upgradeTo('first', '1.35.2');
      await waitFor('the first to have its turn', async () =>
        (await ops.status('first')).phase === 'Running' ? true : undefined,
      );
      await upgradeTo('second', '1.35.9');
      await upgradeTo('third', '1.35.3');
      // The line is told its places before the first's workflow says it runs: read in that order.
      const places = async () => {
        if ((await ops.status('first')).phase !== 'Running') return undefined;
        const [second, third] = [await ops.status('second'), await ops.status('third')];
        return second.queuePosition === 1 && third.queuePosition === 2
          ? { second, third }
          : undefined;
      };
      const { second, third } = await waitFor('the second and third to wait in line', places);
      const turn = `Waiting for its turn on cluster ${CLUSTER}: ClusterOperation first is running`;
      expect([second.phase, third.phase]).toEqual(['Pending', 'Pending']);
      expect(second.message).toBe(`${turn}, and 0 operation(s) wait ahead of it.`);
      expect(third.message).toBe(`${turn}, and 1 operation(s) wait ahead of it.`);
      // Each waits in a workflow of its own, which on-call finds with its place in line.
      const queued = await described('third');
      expect(queued).toMatch(
        new RegExp(`^Workflow: +cluster-operation/${scope.namespace}/third \\(run `, 'm'),
      );
      expect(queued).toMatch(/^Status: +RUNNING, started /m);
      expect(queued).toMatch(/^Phase: +Pending$/m);
      expect(queued).toMatch(/^Queue position: +2$/m);
      // Neither a spec change nor a deletion while an operation runs.
      const spec = { PodSubnet: '10.9.0.0/16' };
      const refused =
        /^403: .*is locked by Lock .*ClusterOperation first \(upgrade-cluster\.yml\) is running/;
      expect(
        await answer(
          clusterAdmin.patchNamespacedCustomObject(
            { ...PROVISIONING_API, namespace: scope.namespace, name: 'ops', body: { spec } },
            MERGE_PATCH,
          ),
        ),
      ).toMatch(refused);
      expect(
        await answer(
          clusterAdmin.deleteNamespacedCustomObject({
            ...PROVISIONING_API,
            namespace: scope.namespace,
            name: 'ops',
          }),
        ),
      ).toMatch(refused);
      // One leaves the line: the one behind it moves up, and is told so.
      await scope.kube.custom.deleteNamespacedCustomObject({
        ...CLUSTER_OPERATION_API,
        namespace: scope.namespace,
        name: 'second',
      });
      const movedUp = await waitFor('the third to move up', async () => {
        const found = await ops.status('third');
        return found.queuePosition === 1 ? found : undefined;
      });
      expect(movedUp.message).toBe(`${turn}, and 0 operation(s) wait ahead of it.`);
      const [first, last] = [await ops.ended('first'), await ops.ended('third')];
      expect([first.phase, last.phase]).toEqual(['Succeeded', 'Succeeded']);
      expect(Date.parse(last.startTime!)).toBeGreaterThanOrEqual(Date.parse(first.completionTime!));
      // The deleted one never ran.
      expect(await ops.versions()).toEqual(['1.35.3', '1.35.3']);
      expect((await ops.noted('third')).lastOperation).toMatchObject({
        kubeVersionBefore: '1.35.2',
        kubeVersionAfter: '1.35.3',
      });
    });
  }, 240_000);

  it('refuses what ansible would run on the engine, and stops a step at its deadline', async () => {
    await ops.operate('templated', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: "{{ lookup('pipe', 'id') }}" },
    });
    const refused = await ops.ended('templated');
    expect(refused.phase).toBe('Failed');
    expect(refused.message).toMatch(/^Nothing was run: spec.extraVars: .* holds a template/);
    expect(refused.steps ?? []).toEqual([]);
    // kubespray's own checks run before the stand-in: a version it does not support stops there.
    await ops.operate('unsupported', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: '1.30.0' },
    });
    const unsupported = await ops.ended('unsupported');
    expect(unsupported).toMatchObject({
      phase: 'Failed',
      failedStep: 'action',
      failedTask: 'validate_inventory : Stop if unsupported version of Kubernetes',
    });

    await ops.withFault(1, 'slow', '300', async () => {
      await ops.operate('slow', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.4' },
        activeDeadlineSeconds: 30,
      });
      const done = await ops.ended('slow', 90_000);
      expect(done).toMatchObject({ phase: 'Failed', failedStep: 'action' });
      expect(done.message).toBe(
        'action failed: activeDeadlineSeconds (30) passed during action: its playbook was ' +
          'stopped, and the hosts are as it left them',
      );
      expect(done.steps!.map((s) => s.phase)).toEqual(['Cancelled']);
      expect(await ops.runnerPodsLeft()).toEqual([]);
      // The worker was still waiting (its node slowed) when the playbook was stopped.
      expect((await ops.versions())[1]).toBe('1.35.3');
    });
  }, 180_000);
  it('refuses, before anything runs, variables that would have ansible act on the engine or that its action does not take', async () => {
    const before = await ops.versions();
    await ops.operate('engine-vars', {
      action: 'upgrade-cluster.yml',
      extraVars: {
        kube_version: '1.35.4',
        download_localhost: true,
        download_run_once: true,
        image_info_command_on_localhost: 'id > /tmp/hostflow-owned',
        kubeadm_download_url: 'http://127.0.0.1:1/kubeadm',
      },
    });
    await ops.operate('confirming', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: '1.35.4', upgrade_node_confirm: true },
    });
    const takes =
      'upgrade-cluster.yml takes kube_version, serial, drain_grace_period, drain_timeout, ' +
      'upgrade_node_pause_seconds or upgrade_node_post_upgrade_pause_seconds';
    const engine = await ops.ended('engine-vars');
    expect(engine.phase).toBe('Failed');
    expect(engine.message!.split('; spec.')).toEqual([
      'Nothing was run: spec.extraVars: download_localhost is refused for every action: it ' +
        'would have ansible act on the worker that runs it, not on the nodes',
      'extraVars: download_run_once is refused for every action: it would have ansible act on ' +
        'the worker that runs it, not on the nodes',
      'extraVars: image_info_command_on_localhost is refused for every action: it would have ' +
        'ansible act on the worker that runs it, not on the nodes',
      'extraVars: kubeadm_download_url is refused for every action: it says where kubespray ' +
        `downloads what the nodes run; ${takes}`,
    ]);
    const confirming = await ops.ended('confirming');
    expect(confirming.message).toBe(
      'Nothing was run: spec.extraVars: upgrade_node_confirm is not a variable ' +
        `upgrade-cluster.yml takes from an operation: use ${takes.replace(/^.* takes /, '')}`,
    );
    // Refused at its start: it never ran a step, never said it started, and no node changed.
    for (const [name, status] of [
      ['engine-vars', engine],
      ['confirming', confirming],
    ] as const) {
      expect([status.steps ?? [], status.startTime]).toEqual([[], undefined]);
      expect((await ops.eventOf(name, 'Refused')).message).toBe(status.message);
      const events = await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace });
      expect(
        events.items.filter((e) => e.involvedObject.name === name).map((e) => e.reason),
      ).toEqual(['Refused']);
    }
    expect(await ops.versions()).toEqual(before);
  }, 180_000);
  it('is cancelled when deleted: its playbook stops, and it says the hosts are as it left them', async () => {
    await ops.withFault(1, 'slow', '300', async () => {
      await ops.operate('deleted', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.4' },
      });
      await ops.actionRunning('deleted');
      // While it runs, describe says where its playbook is: the activity's last heartbeat, which
      // the SDK sends at most every 24 s (80% of the heartbeat timeout). The banner of a task
      // comes with its first result under kubespray's ansible.cfg: the slowed node's task shows
      // as the one before it until it ends, so the play is what is waited for.
      const upgrading = /, at play "Upgrade the nodes", task "[^"]+" \(heartbeat [^)]+ ago\)$/m;
      const running = await waitFor(
        'describe to show the upgrade play',
        async () => {
          const text = await described('deleted');
          return upgrading.test(text) ? text : undefined;
        },
        { timeoutMs: 75_000, intervalMs: 2000 },
      );
      expect(running).toMatch(
        new RegExp(
          `^Waiting on:\n  activity action: kubespray upgrade-cluster\\.yml on cluster ${CLUSTER}, at `,
          'm',
        ),
      );
      expect(running).toMatch(
        new RegExp(`^Steps: +action upgrade-cluster\\.yml: Running since ${TIME}$`, 'm'),
      );
      await scope.kube.custom.deleteNamespacedCustomObject({
        ...CLUSTER_OPERATION_API,
        namespace: scope.namespace,
        name: 'deleted',
      });
      // The cancel reaches the running activity with the answer to its next heartbeat (the SDK
      // sends one at most every 24 s), and is said once the runner pod is gone (ansible-playbook
      // ignores SIGTERM: 5 s of grace, then it is killed): up to about 35 s.
      const cancelled = await ops.eventOf('deleted', 'Cancelled', 90_000);
      expect(cancelled.message).toBe(
        'Cancelled during action: its playbook was stopped, and the hosts of cluster ' +
          `${CLUSTER} are as it left them.`,
      );
      // It is said only once ansible-playbook has stopped: its runner pod is gone by then.
      expect(await ops.runnerPodsLeft()).toEqual([]);
      expect((await ops.noted('deleted')).lastOperation).toMatchObject({ phase: 'Cancelled' });
      expect((await ops.versions())[1]).toBe('1.35.3');
    });
  }, 180_000);

  it('survives its worker killed mid-operation: the next worker follows the same run to its end', async () => {
    const jobs = watchRunnerJobs(`${scope.namespace}/${CLUSTER}`);
    await ops.withFault(1, 'slow', '10', async () => {
      await ops.operate('survivor', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.4' },
      });
      await ops.actionRunning('survivor');
      process.kill(worker.pid, 'SIGKILL');
      await worker.exited;
      worker = await startWorker(scope, workerEnv());
      const done = await ops.ended('survivor', 180_000);
      expect(done).toMatchObject({ phase: 'Succeeded', currentStep: 'action' });
      expect(await ops.versions()).toEqual(['1.35.4', '1.35.4']);
    });
    await jobs.stop();
    // The run is a Job named from the activity's run: the retried attempt found it, not a second.
    expect(jobs.whats().filter((what) => what === 'kubespray upgrade-cluster.yml')).toHaveLength(1);
  }, 300_000);
  it('fails mid-action, then runs again from that step when on-call retries it, keeping both runs', async () => {
    await ops.setFault(0, 'slow', '5'); // the control plane goes first
    try {
      await ops.operate('retried', {
        action: 'upgrade-cluster.yml',
        extraVars: { kube_version: '1.35.0' },
        preHook: [{ action: 'cluster.yml' }],
      });
      // Its pre-hook, cluster.yml, runs first in a runner Job of its own.
      await waitFor(
        "retried's action to start",
        async () => {
          const found = await ops.status('retried');
          return found.phase === 'Running' && found.currentStep === 'action' ? true : undefined;
        },
        { timeoutMs: 120_000 },
      );
      await ops.setFault(1, 'broken', 'kubelet will not stop');
      const failed = await ops.ended('retried');
      expect(failed).toMatchObject({
        phase: 'Failed',
        failedStep: 'action',
        failedHost: 'worker',
        failedTask: 'Check the node',
      });
      expect(await ops.versions()).toEqual(['1.35.0', '1.35.4']); // a failed node stops the rest

      await ops.setFault(1, 'broken');
      const cli = await run(process.execPath, [
        join(REPO_ROOT, 'dist/cli/hostflow.js'),
        'retry',
        'operation',
        `${scope.namespace}/retried`,
        '--kubeconfig',
        testEnv('kubeconfig'),
      ]);
      expect(cli.stdout).toContain(`asked ClusterOperation ${scope.namespace}/retried to retry`);
      const done = await waitFor('retried to succeed', async () => {
        const found = await ops.status('retried');
        return found.phase === 'Succeeded' ? found : undefined;
      });
      // The pre-hook is not run again; the failure's fields went with the run that failed.
      expect(done.steps!.map((s) => [s.name, s.phase, s.message])).toEqual([
        ['preHook[0]', 'Succeeded', 'in an earlier run'],
        ['action', 'Succeeded', undefined],
      ]);
      expect(done.failedStep).toBeUndefined();
      // The status keeps the retry value it ran for: the bridge sends each value once.
      const asked = (await scope.kube.custom.getNamespacedCustomObject({
        ...CLUSTER_OPERATION_API,
        namespace: scope.namespace,
        name: 'retried',
      })) as { metadata: { annotations?: Record<string, string> } };
      expect(done.retry).toBe(asked.metadata.annotations?.[RETRY_ANNOTATION]);
      expect(await ops.versions()).toEqual(['1.35.0', '1.35.0']);
      // Both runs are kept. The status says Succeeded before the run ends (it still releases the
      // cluster's Lease), and the visibility store lags behind: waited for, not read once.
      const query = `WorkflowId = 'cluster-operation/${scope.namespace}/retried'`;
      const runs = async () => {
        const names = [];
        for await (const w of scope.temporal.client.workflow.list({ query }))
          names.push(w.status.name);
        return names.sort();
      };
      await waitFor('both runs to end', async () =>
        (await runs()).every((name) => name === 'COMPLETED') ? true : undefined,
      );
      expect(await runs()).toEqual(['COMPLETED', 'COMPLETED']);
    } finally {
      await ops.setFault(0, 'slow');
      await ops.setFault(1, 'broken');
    }
  }, 300_000);
  it('dry-runs an upgrade: nothing changes, and its status says what would, host by host', async () => {
    await ops.operate('dry', {
      action: 'upgrade-cluster.yml',
      extraVars: { kube_version: '1.35.1' },
      dryRun: true,
    });
    const done = await ops.ended('dry');
    expect(done.phase).toBe('Succeeded');
    expect(done.steps![0]!.wouldChange).toMatchObject({ master: 1, worker: 1 });
    expect(done.message).toBe(
      `Dry run of upgrade-cluster.yml on cluster ${CLUSTER}: nothing was changed; it would ` +
        'change tasks on action: master 1, worker 1.',
    );
    expect(await ops.versions()).toEqual(['1.35.0', '1.35.0']);
    expect(await ops.noted('dry')).toMatchObject({ kubeVersion: '1.35.0' });
  }, 180_000);
});
