// The chaos run: TaskRuns on every kind of platform, builds that complete at random, and `kill -9`
// of the worker, the bridge and the OTP service at random points meanwhile. Afterwards it counts
// what the engine promises never happens: a build left without its Secret, an error Secret where
// capacity existed, and anything left behind (build users, VMs, slots, Secrets, running
// workflows) or a healthy host marked unhealthy. Deterministic in its choices for a given seed.
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import pLimit from 'p-limit';
import type { SshHost } from '../local-stack/ssh-hosts.js';
import { LABELS, SECRET_PREFIX } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { allocatorState } from '../shared/contracts/allocator.js';
import { KIND, SA } from '../shared/search-attributes.js';
import type { AllocationSummary } from '../shared/contracts/allocator.js';
import { benchTaskRun, completeTaskRun } from './taskruns.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { seededRandom } from '../shared/seeded-random.js';

export interface ChaosTarget {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  temporal: Client;
  /** Where the TaskRuns are created. */
  namespace: string;
  /** TaskRuns are spread over these, in turn. */
  platforms: string[];
  /** Platforms with an allocator: their slots must all be free at the end, their hosts healthy. */
  allocatorPlatforms: string[];
  /** SIGKILL; each comes back by itself. */
  processes: Array<{ name: string; kill(): Promise<void> }>;
  /** Static hosts: no build user may be left on them. */
  staticHosts: SshHost[];
  /** VMs launched for single TaskRuns that are still there (none may be left). */
  vmsOfTaskRuns(): Promise<string[]>;
  /** VMs of the dynamic pool (they may stay, idle, but only as the pool's own hosts). */
  poolVms(): Promise<string[]>;
}

export interface ChaosOptions {
  taskRuns: number;
  kills: number;
  seed: number;
  /** How long a build "runs" once its Secret is there, in ms: [min, max]. */
  buildMs: [number, number];
  /** TaskRuns are created over this long. */
  spreadMs: number;
  /** How long the run may take in all before whatever is left counts as lost or leaked. */
  timeoutMs: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  taskRuns: number;
  served: number;
  errors: number;
  lost: number;
  kills: number;
  leakedUsers: number;
  leakedVms: number;
  leakedSlots: number;
  leakedSecrets: number;
  runningWorkflows: number;
  unhealthyHosts: number;
  errorMessages: string[];
  seconds: number;
}

export async function runChaos(target: ChaosTarget, options: ChaosOptions): Promise<ChaosReport> {
  const random = seededRandom(options.seed);
  const between = ([min, max]: [number, number]) => min + Math.floor(random() * (max - min));
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const names = Array.from({ length: options.taskRuns }, (_, i) => `chaos-${i}`);
  const answered = new Map<string, 'served' | 'error'>();
  const errorMessages: string[] = [];
  const completed = new Set<string>();
  const create = pLimit(8);
  let kills = 0;

  // Builds: each Secret that appears is looked at once, then its build "runs" and completes.
  let watching = true;
  const builds: Promise<void>[] = [];
  const watcher = (async () => {
    while (watching) {
      const list = await target.core
        .listNamespacedSecret({
          namespace: target.namespace,
          labelSelector: `${LABELS.multiPlatformSecret}=true`,
        })
        .catch(() => undefined);
      for (const secret of list?.items ?? []) {
        const name = secret.metadata?.name?.slice(SECRET_PREFIX.length);
        if (!name || answered.has(name)) continue;
        const error = secret.data?.error;
        answered.set(name, error ? 'error' : 'served');
        if (error) errorMessages.push(`${name}: ${Buffer.from(error, 'base64').toString('utf8')}`);
        const wait = between(options.buildMs);
        builds.push(
          (async () => {
            await sleep(wait);
            await retry(() => completeTaskRun(target.custom, target.namespace, name));
            completed.add(name);
          })(),
        );
      }
      await sleep(250);
    }
  })();

  // kill -9 at random points while TaskRuns arrive and builds run.
  const order = target.processes.map((_, i) => i);
  const killer = (async () => {
    const gap = Math.max(
      2_000,
      (options.spreadMs + options.buildMs[1]) / Math.max(1, options.kills),
    );
    while (kills < options.kills && completed.size < names.length && Date.now() < deadline) {
      await sleep(between([gap / 2, gap * 1.5]));
      // Every process in turn, in a random order each round: each is killed as often.
      if (kills % target.processes.length === 0) shuffle(order, random);
      const victim = target.processes[order[kills % order.length]!]!;
      log(`chaos: kill -9 ${victim.name} (${answered.size}/${names.length} answered)`);
      await victim.kill();
      kills++;
    }
  })();

  await Promise.all(
    names.map((name, i) =>
      create(async () => {
        // Each at its own moment of the spread, whatever the limiter held it up for.
        await sleep(Math.max(0, started + (options.spreadMs * i) / names.length - Date.now()));
        const platform = target.platforms[i % target.platforms.length]!;
        await retry(() =>
          target.custom.createNamespacedCustomObject({
            ...TASKRUN_API,
            namespace: target.namespace,
            body: benchTaskRun(name, target.namespace, platform),
          }),
        );
      }),
    ),
  );
  await until(() => completed.size === names.length, deadline);
  watching = false;
  await Promise.all([watcher, killer, ...builds]);
  log(
    `chaos: every build answered and completed after ${Math.round((Date.now() - started) / 1000)} s`,
  );

  // Everything must now go away by itself.
  const settle = Math.min(deadline, Date.now() + 180_000);
  const leftovers = async () => {
    const secrets = await target.core.listNamespacedSecret({
      namespace: target.namespace,
      labelSelector: `${LABELS.multiPlatformSecret}=true`,
    });
    const users = (await Promise.all(target.staticHosts.map((h) => buildUsers(h)))).flat();
    const running = await runningTaskRunWorkflows(target);
    const slots = await slotsInUse(target);
    const vms = await target.vmsOfTaskRuns();
    const pool = await target.poolVms();
    const poolHosts = new Set(slots.hosts.map((h) => h.name));
    return {
      secrets: secrets.items.length,
      users: users.length,
      running,
      slots: slots.inUse,
      vms: vms.length + pool.filter((id) => !poolHosts.has(id)).length,
      unhealthy: slots.hosts.filter((h) => h.health !== 'healthy').length,
    };
  };
  let left = await leftovers();
  while (
    Date.now() < settle &&
    (left.secrets || left.users || left.running || left.slots || left.vms)
  ) {
    await sleep(1_000);
    left = await leftovers();
  }
  return {
    taskRuns: names.length,
    served: [...answered.values()].filter((a) => a === 'served').length,
    errors: [...answered.values()].filter((a) => a === 'error').length,
    lost: names.length - answered.size,
    kills,
    leakedUsers: left.users,
    leakedVms: left.vms,
    leakedSlots: left.slots,
    leakedSecrets: left.secrets,
    runningWorkflows: left.running,
    unhealthyHosts: left.unhealthy,
    errorMessages,
    seconds: Math.round((Date.now() - started) / 1000),
  };
}

function shuffle(items: number[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

async function buildUsers(host: SshHost): Promise<string[]> {
  const { stdout } = await host.exec(['getent', 'passwd']);
  return stdout
    .split('\n')
    .map((line) => line.split(':')[0]!)
    .filter((user) => /^u-[0-9a-f]{12}$/.test(user));
}

async function runningTaskRunWorkflows(target: ChaosTarget): Promise<number> {
  const query =
    `${SA.kind.name} = '${KIND.taskRun}' AND ${SA.namespace.name} = '${target.namespace}' ` +
    `AND ExecutionStatus = 'Running'`;
  return (await target.temporal.workflow.count(query)).count;
}

/** Slots in use over every allocator, and every allocator's hosts. */
async function slotsInUse(
  target: ChaosTarget,
): Promise<{ inUse: number; hosts: AllocationSummary['hosts'] }> {
  let inUse = 0;
  const hosts: AllocationSummary['hosts'] = [];
  for (const platform of target.allocatorPlatforms) {
    const view = (await target.temporal.workflow
      .getHandle(WORKFLOW_ID.allocator(platform))
      .query(allocatorState)
      .catch(() => undefined)) as AllocationSummary | undefined;
    if (!view) continue;
    inUse += view.inUse;
    hosts.push(...view.hosts);
  }
  return { inUse, hosts };
}

async function retry<T>(call: () => Promise<T>, attempts = 30): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await call();
    } catch (err) {
      if (i >= attempts) throw err;
      await sleep(500);
    }
  }
}

async function until(condition: () => boolean, deadline: number): Promise<void> {
  while (!condition() && Date.now() < deadline) await sleep(200);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
