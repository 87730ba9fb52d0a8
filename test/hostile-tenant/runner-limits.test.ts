// A hostile tenant's runaway custom actions (issue 37, item 6), through the project's own entry
// points: the tenant creates a ConfigMap of shell scripts and ClusterOperations that run them on
// its Provisioning's cluster; a real worker and bridge serve them, each step a runner Job on the
// suite's one kubelet. Each step fails naming the limit it hit, while bursts of TaskRuns on the
// same worker process (as `npm start` runs one worker for every family) are served as usual:
//   - a 2 GB line without a newline, and /dev/zero to stderr: the runner's log cap
//     (HOSTFLOW_RUNNER_MAX_LOG_BYTES, small here), read in bounded lines through the API;
//   - filling its disk: evicted by the kubelet at its ephemeral-storage limit (its /tmp);
//   - allocating past its memory limit: OOMKilled;
//   - a fork bomb: held by the node's pod PID limit (local-stack/kubelet.ts, podPidsLimit); the
//     engine cannot see that limit (no status says it), so the step ends at its operation's
//     deadline, which it names, and its log shows the fork refused;
//   - sleeping past the operation's activeDeadlineSeconds: named, and its Job gone.
// On the code before fef73ab these ran in the worker's bubblewrap sandbox, in the worker's own
// pod, with none of these limits: the 2 GB line was buffered whole by readline (the worker dies
// of its heap, and with it the TaskRuns it served), /dev/zero to stderr grew the worker's memory
// without end, the disk and memory fills took the worker's, and the fork bomb shared the worker's
// PIDs; no step failed naming a limit and no runner Job was ever seen in the API server, so every
// expectation on the steps' messages below fails there. The burst timings are printed, not
// asserted (two cores, shared with the other test files).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../../local-stack/process.js';
import { runnerSelector } from '../support/runner-jobs.js';
import { registerBareMetalHosts, type BareMetalHosts } from '../support/baremetal.js';
import {
  clusterOperations,
  installCluster,
  type OperationStatus,
} from '../support/cluster-operations.js';
import { runnerEnv, uniqueSuffix } from '../support/env.js';
import { kubesprayWorkerEnv } from '../support/kubespray.js';
import { createStaticPool, type StaticPool } from '../support/static-pool.js';

const sfx = uniqueSuffix();
const CLUSTER = 'cluster-limits';
const LOG_CAP = 1 << 20;
/** Below the runner's default ephemeral-storage request (64Mi), which follows it down. */
const DISK = '32Mi';
const MEMORY = '256Mi';
/** TaskRuns in one burst: the static pool's slots (2 hosts, 4 builds each). */
const BURST = 8;

let pool: StaticPool;
/** Where the worker keeps its copy of each run's log. */
let workerLogs: string;
let metal: BareMetalHosts;
let ops: ReturnType<typeof clusterOperations>;

/** A pause without a fork (a fork bomb leaves none to spare): a read on a FIFO that never fills. */
const PAUSE = `mkfifo /tmp/pause && exec 3<>/tmp/pause
pause() { read -t "$1" -u 3 || true; }
`;

const SCRIPTS = {
  // One line of 2 GB, no newline.
  'line.sh': `head -c 2G /dev/zero | tr '\\0' a\n`,
  'zero.sh': `cat /dev/zero >&2\n`,
  // Far past its /tmp's limit, then waits for the kubelet's eviction manager (every ~10 s).
  'disk.sh': `${PAUSE}head -c 256M /dev/zero > /tmp/fill\necho filled\npause 300\n`,
  'memory.sh': `exec python3 -c 'data = b"x" * (1 << 30)'\n`,
  // The classic bomb (each call a pipeline of two more, in the background), bounded at 1,024
  // waiting leaves so that a node without a PID limit (as the code before fef73ab had none) does not
  // lose this machine's 32,768 PIDs to it. Its errors go nowhere: the log cap would end it first.
  'bomb.sh': `${PAUSE}bomb() { [ "$1" -gt 0 ] || { pause 600; return; }; bomb $(($1 - 1)) | bomb $(($1 - 1)) & }
bomb 10 2>/dev/null
# How many processes it holds, counted without a fork (its own PID namespace's /proc).
for i in 1 2 3 4; do pause 5; procs=(/proc/[0-9]*); echo "processes: \${#procs[@]}"; done
pause 3600
`,
  'sleep.sh': `exec sleep 3600\n`,
};

beforeAll(async () => {
  const kubespray = kubesprayWorkerEnv(sfx);
  workerLogs = join(kubespray.HOSTFLOW_PROVISIONING_DIR, '.logs');
  pool = await createStaticPool('runlim', 2, {
    worker: {
      ...kubespray,
      HOSTFLOW_BAREMETAL_NAMESPACES: `metal3-${sfx}`,
      HOSTFLOW_RUNNER_MAX_LOG_BYTES: String(LOG_CAP),
      HOSTFLOW_RUNNER_EPHEMERAL_STORAGE_LIMIT: DISK,
      HOSTFLOW_RUNNER_MEMORY_LIMIT: MEMORY,
      // Half of one of this machine's two cores: a spinning run leaves the worker the rest.
      HOSTFLOW_RUNNER_CPU_LIMIT: '500m',
    },
  });
  await pool.scope.setHostConfig(
    pool.hostEntries([
      { host: 0, concurrency: BURST / 2 },
      { host: 1, concurrency: BURST / 2 },
    ]),
  );
  metal = await registerBareMetalHosts(pool.scope, { count: 2, sfx });
  await pool.scope.kube.core.createNamespacedConfigMap({
    namespace: pool.scope.namespace,
    body: { metadata: { name: 'runaway' }, data: SCRIPTS },
  });
  await installCluster(pool.scope, metal, { name: 'limits', cluster: CLUSTER, workers: [1] });
  ops = clusterOperations(pool.scope, metal, { name: 'limits', cluster: CLUSTER });
}, 240_000);

afterAll(async () => {
  await pool?.dispose();
  await metal?.dispose();
});

const shell = (key: keyof typeof SCRIPTS) => ({
  actionType: 'shell',
  actionSource: 'configmap',
  actionSourceRef: { name: 'runaway' },
  action: key,
});

let bursts = 0;
/** BURST TaskRuns at once: how long until each has its build Secret; then their slots back. */
async function burst(): Promise<number> {
  const { taskRuns } = pool.scope;
  const names = Array.from({ length: BURST }, (_, i) => `burst-${bursts}-${i}`);
  bursts++;
  const t0 = Date.now();
  await Promise.all(names.map((name) => taskRuns.create({ name, platform: pool.platform })));
  const secrets = await Promise.all(names.map((name) => taskRuns.waitForSecret(name, 120_000)));
  const ms = Date.now() - t0;
  for (const secret of secrets) expect(Object.keys(secret)).not.toContain('error');
  await Promise.all(names.map((name) => taskRuns.complete(name)));
  await Promise.all(names.map((name) => taskRuns.waitForSecretGone(name, 120_000)));
  return ms;
}

/** Bursts, one after another, for as long as operation `name` runs; its end status. */
async function burstsDuring(name: string, timings: Array<[string, number]>) {
  for (;;) {
    const status = await ops.status(name);
    if (['Succeeded', 'Failed', 'Cancelled'].includes(status.phase ?? '')) return status;
    const during = status.currentStep ? `${name} ${status.currentStep}` : `${name} (queued)`;
    const took = await burst();
    console.log(`burst during ${during}: ${took} ms`);
    timings.push([during, took]);
  }
}

/** The worker's peak resident memory so far, in MiB. */
const workerPeakMiB = () => {
  const status = readFileSync(`/proc/${pool.worker.pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024);
};

const stepOf = (status: OperationStatus, name: string) =>
  status.steps!.find((step) => step.name === name)!;

/** The cluster's runner Jobs that still exist. */
const jobsLeft = async () =>
  (
    await pool.scope.kube.batch.listNamespacedJob({
      namespace: runnerEnv().HOSTFLOW_RUNNER_NAMESPACE!,
      labelSelector: runnerSelector(`${pool.scope.namespace}/${CLUSTER}`),
    })
  ).items.map((job) => job.metadata!.name!);

describe("a hostile tenant's runaway custom actions", () => {
  it('fail, each naming its limit, while the same worker serves bursts of TaskRuns as usual', async () => {
    const baseline: number[] = [await burst(), await burst()];
    const peakBefore = workerPeakMiB();
    const during: Array<[string, number]> = [];

    // Each a step of its own, in one operation: a failed step stops the rest but for post-hooks
    // marked `always`.
    await ops.operate('runaway', {
      ...shell('line.sh'),
      postHook: (['zero.sh', 'disk.sh', 'memory.sh'] as const).map((key) => ({
        ...shell(key),
        always: true,
      })),
    });
    const runaway = await burstsDuring('runaway', during);
    // The fork bomb and the sleeper run until their operation's deadline, which cancels them.
    await ops.operate('bomb', { ...shell('bomb.sh'), activeDeadlineSeconds: 30 });
    const bomb = await burstsDuring('bomb', during);
    await ops.operate('sleeper', { ...shell('sleep.sh'), activeDeadlineSeconds: 15 });
    const sleeper = await burstsDuring('sleeper', during);
    const peakAfter = workerPeakMiB();

    type Timed = { name: string; action: string; startTime?: string; completionTime?: string };
    const took = (step: Timed) =>
      `${step.action} ${((Date.parse(step.completionTime!) - Date.parse(step.startTime!)) / 1000).toFixed(1)} s`;
    console.log(
      `the hostile steps, each from its start to its end: ` +
        [runaway, bomb, sleeper]
          .flatMap((status) => (status.steps as Timed[]).map(took))
          .join(', '),
    );
    const ms = (list: number[]) => list.map((t) => `${(t / 1000).toFixed(1)} s`).join(', ');
    console.log(
      `bursts of ${BURST} TaskRuns, until every build Secret was written:\n` +
        `  without hostile runs: ${ms(baseline)}\n` +
        during.map(([what, t]) => `  during ${what}: ${ms([t])}`).join('\n') +
        `\nthe worker's peak memory: ${peakBefore} MiB before the hostile runs, ${peakAfter} MiB after`,
    );

    const what = (key: string) => `shell ${key} \\(ConfigMap runaway\\)`;
    const logCap = `wrote more than ${LOG_CAP} bytes of log \\(the runner's log cap\\)`;
    expect(runaway.phase).toBe('Failed');
    expect(stepOf(runaway, 'action').message).toMatch(new RegExp(`^${what('line.sh')} ${logCap}`));
    expect(stepOf(runaway, 'postHook[0]').message).toMatch(
      new RegExp(`^${what('zero.sh')} ${logCap}`),
    );
    expect(stepOf(runaway, 'postHook[1]').message).toMatch(
      new RegExp(`^${what('disk.sh')} was evicted: .*(ephemeral|EmptyDir).*${DISK}`, 's'),
    );
    expect(stepOf(runaway, 'postHook[2]').message).toMatch(
      new RegExp(`^${what('memory.sh')} was killed at its memory limit of ${MEMORY}`),
    );

    expect(bomb).toMatchObject({
      phase: 'Failed',
      failedStep: 'action',
      message:
        'action failed: activeDeadlineSeconds (30) passed during action: its playbook was ' +
        'stopped, and the hosts are as it left them',
    });
    // The pod's PID limit held the bomb, which would have had over 1,024 processes: it had at
    // most 256 (its log, as the worker copied it).
    const clusterLogs = join(workerLogs, pool.scope.namespace, CLUSTER);
    const bombLog = readdirSync(clusterLogs).find((file) => file.startsWith('custom-bomb_sh.'))!;
    const held = [
      ...readFileSync(join(clusterLogs, bombLog), 'utf8').matchAll(/^processes: (\d+)$/gm),
    ];
    const most = Math.max(...held.map((match) => Number(match[1])));
    console.log(`the fork bomb held at most ${most} processes`);
    expect(held.length).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(256);
    expect(most).toBeGreaterThan(128);
    expect(sleeper).toMatchObject({
      phase: 'Failed',
      failedStep: 'action',
      message:
        'action failed: activeDeadlineSeconds (15) passed during action: its playbook was ' +
        'stopped, and the hosts are as it left them',
    });
    // Every run's Job is gone (deleted in the foreground as its step ended), pods and all.
    await waitFor('the runner Jobs to go', async () =>
      (await jobsLeft()).length === 0 ? true : undefined,
    );
    // Every burst was served (burst() checks each Secret), during each hostile step.
    expect(during.length).toBeGreaterThanOrEqual(3);
  }, 420_000);
});
