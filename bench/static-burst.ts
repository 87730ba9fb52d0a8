// Benchmark: a burst of static-pool TaskRuns with real SSH provisioning (sshd hosts in network
// namespaces, the OTP service, build users created and removed over SSH). Prints one JSON line.
//
// Only hosts × concurrency builds can hold a slot at once, so each TaskRun is completed as soon
// as its Secret appears: its slot frees and the next waiter is served. "Created → Secret" is
// reported for every TaskRun (waiters' figures include their time in line) and separately for
// the TaskRuns that found a free slot on arrival, the ones the target applies to (docs/architecture.md,
// "Targets": p50 ≤ 1 s, p99 ≤ 3 s). A TaskRun found a free slot if it never carried the
// waiting-for-platform label, which the workflow sets whenever the allocator queues it.
import { Watch } from '@kubernetes/client-node';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import pLimit from 'p-limit';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { LABELS, SECRET_KEYS, SECRET_PREFIX } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { eventMs } from '../cli/timeline.js';
import { cpuByProcess, cpuSpent } from './cpu.js';
import { startBenchStack } from './stack.js';
import { adminLogins } from './ssh-logins.js';
import { peakRssMb, perSecond, seconds, summarize } from './stats.js';
import { benchTaskRun, completeTaskRun } from './taskruns.js';

const PLATFORM = 'linux/bench';
const CREATE_CONCURRENCY = 16;
const API_CONCURRENCY = 16;
const TIMEOUT_MS = 10 * 60_000;

interface KubeObject {
  metadata?: { name?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
}

async function main(): Promise<void> {
  const COUNT = envInt('BENCH_TASKRUNS', 200);
  const HOSTS = envInt('BENCH_HOSTS', 4);
  const CONCURRENCY = envInt('BENCH_CONCURRENCY', 8);
  const stack = await startBenchStack(
    {},
    { sshHosts: HOSTS, platform: PLATFORM, concurrency: CONCURRENCY },
  );
  const connection = await Connection.connect({ address: stack.temporal.address });
  const watches: AbortController[] = [];
  try {
    const client = new Client({ connection, namespace: stack.temporal.namespace });
    const names = Array.from({ length: COUNT }, (_, i) => `sburst-${i}`);
    const uids = new Map<string, string>();
    const created = new Map<string, number>();
    const secretAt = new Map<string, number>();
    const completedAt = new Map<string, number>();
    const secretGoneAt = new Map<string, number>();
    const waited = new Set<string>();
    const errors = new Map<string, string>();
    const api = pLimit(API_CONCURRENCY);
    const progress = () =>
      `${created.size} created, ${secretAt.size} served (${waited.size} waited), ` +
      `${completedAt.size} completed, ${secretGoneAt.size} cleaned up of ${COUNT}`;
    // Others go by command name: `sshd` is the stand-in hosts (their sessions and what those ran),
    // CPU that real hosts spend on machines of their own.
    const processes = {
      worker: stack.worker.pid,
      bridge: stack.bridge.pid,
      'otp-server': stack.otp!.process.pid,
    };
    let cpuAtSlotsFilled: Record<string, number> | undefined;
    let slotsFilledAt = NaN;
    let failed: (err: Error) => void = () => undefined;
    const failure = new Promise<never>((_, reject) => (failed = reject));
    failure.catch(() => undefined); // observed through the races below
    const until = (what: string, done: () => boolean) =>
      Promise.race([
        failure,
        new Promise<void>((resolve, reject) => {
          const deadline = Date.now() + TIMEOUT_MS;
          const timer = setInterval(() => {
            if (done()) resolve();
            else if (Date.now() > deadline)
              reject(new Error(`timed out waiting for ${what}: ${progress()}`));
            else return;
            clearInterval(timer);
          }, 20);
        }),
      ]);

    const complete = (name: string) =>
      api(async () => {
        completedAt.set(name, performance.now());
        await completeTaskRun(stack.custom, stack.namespace, name);
      }).catch((err: Error) => failed(new Error(`complete ${name}: ${err.message}`)));

    const watchDone = (what: string) => (err: unknown) => {
      if (err && !(err instanceof Error && err.name === 'AbortError'))
        failed(new Error(`${what} watch ended: ${(err as Error).message ?? String(err)}`));
    };
    const watch = new Watch(stack.kc);
    // Secret DELETED stands for "cleaned up": the workflow deletes the Secret only after it
    // has removed the build user from the host (workflows/static-pool.ts, cleanUpStaticPool).
    watches.push(
      await watch.watch(
        `/api/v1/namespaces/${stack.namespace}/secrets`,
        {},
        (type: string, obj: KubeObject) => {
          const secret = obj.metadata?.name ?? '';
          if (!secret.startsWith(SECRET_PREFIX)) return;
          const name = secret.slice(SECRET_PREFIX.length);
          if (type === 'ADDED' && !secretAt.has(name)) {
            secretAt.set(name, performance.now());
            if (secretAt.size === HOSTS * CONCURRENCY) {
              cpuAtSlotsFilled = cpuByProcess(processes);
              slotsFilledAt = performance.now();
            }
            const error = obj.data?.[SECRET_KEYS.error];
            if (error) errors.set(name, Buffer.from(error, 'base64').toString('utf8'));
            void complete(name);
          } else if (type === 'DELETED') {
            secretGoneAt.set(name, performance.now());
          }
        },
        watchDone('Secret'),
      ),
    );
    watches.push(
      await watch.watch(
        `/apis/${TASKRUN_API.group}/${TASKRUN_API.version}/namespaces/${stack.namespace}/${TASKRUN_API.plural}`,
        {},
        (_type: string, obj: KubeObject) => {
          const name = obj.metadata?.name;
          if (name && obj.metadata?.labels?.[LABELS.waitingForPlatform]) waited.add(name);
        },
        watchDone('TaskRun'),
      ),
    );

    const create = pLimit(CREATE_CONCURRENCY);
    const loginsAtStart = await Promise.all(stack.sshHosts.map(adminLogins));
    const cpuAtStart = cpuByProcess(processes);
    const start = performance.now();
    const creating = Promise.all(
      names.map((name) =>
        create(async () => {
          created.set(name, performance.now());
          const tr = (await stack.custom.createNamespacedCustomObject({
            ...TASKRUN_API,
            namespace: stack.namespace,
            body: benchTaskRun(name, stack.namespace, PLATFORM),
          })) as { metadata: { uid: string } };
          uids.set(name, tr.metadata.uid);
        }),
      ),
    );
    await Promise.race([failure, creating]);
    await until('every Secret', () => secretAt.size === COUNT);
    const end = Math.max(...secretAt.values());
    const cpuAtServed = cpuByProcess(processes);
    await until('every Secret to be deleted', () => secretGoneAt.size === COUNT);
    // New SSH connections (handshakes) each host took for the burst's provisioning and cleanup
    const logins = (await Promise.all(stack.sshHosts.map(adminLogins))).map(
      (n, i) => n - loginsAtStart[i]!,
    );

    // Each workflow's whole history: wait for it to finish (the slot release and the CleanedUp
    // Event come after the Secret deletion), then count its events and time its phases.
    const histories = await Promise.all(
      names.map((name) =>
        api(async () => {
          const handle = client.workflow.getHandle(
            WORKFLOW_ID.taskRun(stack.namespace, name, uids.get(name)!),
          );
          await handle.result();
          const events = (await handle.fetchHistory()).events ?? [];
          return { name, events: events.length, phases: phases(events, created.get(name)!) };
        }),
      ),
    );
    const allocatorHistory =
      (await client.workflow.getHandle(WORKFLOW_ID.allocator(PLATFORM)).fetchHistory()).events ??
      [];
    const leftoverUsers = (
      await Promise.all(stack.sshHosts.map((h) => h.exec(['getent', 'passwd'])))
    ).flatMap((r) => r.stdout.split('\n').filter((line) => /^u-[0-9a-f]{12}:/.test(line)));

    const latency = (subset: string[]) =>
      summarize(subset.map((n) => secretAt.get(n)! - created.get(n)!));
    const freeSlot = names.filter((n) => !waited.has(n));
    const historySorted = histories.map((h) => h.events).sort((a, b) => a - b);
    const freePhases = histories.filter((h) => !waited.has(h.name)).map((h) => h.phases);
    const breakdown = Object.fromEntries(
      (Object.keys(freePhases[0] ?? {}) as Array<keyof Phases>).map((key) => {
        const { p50, p99 } = summarize(freePhases.map((p) => p[key]));
        return [key, { p50, p99 }];
      }),
    );
    console.log(
      JSON.stringify({
        bench: 'static-burst',
        taskRuns: COUNT,
        hosts: HOSTS,
        concurrencyPerHost: CONCURRENCY,
        errorSecrets: errors.size,
        ...(errors.size > 0 ? { firstError: [...errors.values()][0] } : {}),
        createdToSecretMs: {
          freeSlot: { count: freeSlot.length, ...latency(freeSlot) },
          all: latency(names),
        },
        freeSlotBreakdownMs: breakdown,
        allocatorWorkflowTasksMs: workflowTaskTimes(allocatorHistory),
        throughputPerSec: perSecond(COUNT, end - start),
        // What each process used while the first hosts × concurrency were served, and in all.
        cpuSeconds: {
          untilEverySlotTaken: {
            wall: seconds(slotsFilledAt - start),
            ...(cpuAtSlotsFilled ? cpuSpent(cpuAtStart, cpuAtSlotsFilled) : {}),
          },
          untilEverySecret: {
            wall: seconds(end - start),
            ...cpuSpent(cpuAtStart, cpuAtServed),
          },
        },
        completedToCleanedMs: summarize(
          names.map((n) => secretGoneAt.get(n)! - completedAt.get(n)!),
        ),
        historyEvents: {
          p50: summarize(historySorted).p50,
          max: historySorted[historySorted.length - 1],
          allocator: allocatorHistory.length,
        },
        leftoverBuildUsers: leftoverUsers.length,
        sshAdminLoginsPerHost: { max: Math.max(...logins), total: logins.reduce((a, b) => a + b) },
        peakRssMb: {
          worker: peakRssMb(stack.worker.pid),
          bridge: peakRssMb(stack.bridge.pid),
          otpServer: peakRssMb(stack.otp!.process.pid),
        },
        targets: { freeSlotP50Ms: 1000, freeSlotP99Ms: 3000, historyEventsMax: 60 },
      }),
    );
  } finally {
    for (const w of watches) w.abort();
    await connection.close().catch(() => undefined);
    await stack.stop();
  }
}

type HistoryEvent = NonNullable<
  Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']
>[number];

/** temporal.api.enums.v1.EventType values this benchmark reads. */
const EVENT = {
  started: 1,
  workflowTaskScheduled: 5,
  workflowTaskCompleted: 7,
  activityScheduled: 10,
  activityStarted: 11,
  activityCompleted: 12,
} as const;

interface Phases {
  /** TaskRun created → its workflow started: the bridge and the start call. */
  toWorkflowStart: number;
  /** The allocator's answer (granted or queued), through its update. */
  requestSlot: number;
  /** requestSlot scheduled → picked up by the worker. */
  requestQueued: number;
  /** deliverBuildUser scheduled → picked up by the worker. */
  deliverQueued: number;
  /** deliverBuildUser running: SSH provisioning, OTP store, Secret write. */
  deliverRun: number;
  /** Workflow tasks (scheduled → completed, local activities included) before delivery ends. */
  workflowTasks: number;
}

/** Where a TaskRun's time to its Secret went, from its workflow history. */
function phases(events: HistoryEvent[], createdAt: number): Phases {
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const activity = (type: string) => {
    const scheduled = events.find(
      (e) =>
        e.eventType === EVENT.activityScheduled &&
        e.activityTaskScheduledEventAttributes?.activityType?.name === type,
    );
    const of = (
      eventType: number,
      attrs: 'activityTaskStartedEventAttributes' | 'activityTaskCompletedEventAttributes',
    ) =>
      events.find(
        (e) =>
          e.eventType === eventType &&
          Number(e[attrs]?.scheduledEventId) === Number(scheduled?.eventId),
      );
    return {
      scheduled: ms(scheduled),
      started: ms(of(EVENT.activityStarted, 'activityTaskStartedEventAttributes')),
      completed: ms(of(EVENT.activityCompleted, 'activityTaskCompletedEventAttributes')),
    };
  };
  const request = activity('requestSlot');
  const deliver = activity('deliverBuildUser');
  let workflowTasks = 0;
  for (const e of events) {
    if (e.eventType !== EVENT.workflowTaskCompleted || ms(e) > deliver.completed) continue;
    const scheduled = byId.get(Number(e.workflowTaskCompletedEventAttributes?.scheduledEventId));
    workflowTasks += ms(e) - ms(scheduled);
  }
  return {
    toWorkflowStart:
      ms(events.find((e) => e.eventType === EVENT.started)) - (performance.timeOrigin + createdAt),
    requestSlot: request.completed - request.scheduled,
    requestQueued: request.started - request.scheduled,
    deliverQueued: deliver.started - deliver.scheduled,
    deliverRun: deliver.completed - deliver.started,
    workflowTasks,
  };
}

/** When an event happened (NaN for one the history lacks). */
const ms = (e: HistoryEvent | undefined) => (e?.eventTime ? eventMs(e) : NaN);

/** How long a workflow's tasks waited in their queue, and ran, and how many there were. */
function workflowTaskTimes(events: HistoryEvent[]) {
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const queued: number[] = [];
  const ran: number[] = [];
  for (const e of events) {
    if (e.eventType !== EVENT.workflowTaskCompleted) continue;
    const attrs = e.workflowTaskCompletedEventAttributes;
    const started = byId.get(Number(attrs?.startedEventId));
    ran.push(ms(e) - ms(started));
    queued.push(ms(started) - ms(byId.get(Number(attrs?.scheduledEventId))));
  }
  const { p50: queuedP50, p99: queuedP99 } = summarize(queued);
  const { p50: ranP50, p99: ranP99 } = summarize(ran);
  return { count: ran.length, queuedP50, queuedP99, ranP50, ranP99 };
}

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`${name}: "${raw}" is not a positive integer`);
  return value;
}

main().catch((err) => {
  console.error(`bench static-burst: ${(err as Error).message}`);
  process.exit(1);
});
