// Runs one request as a Job of its own and follows it to its end: its Lease on the cluster, its
// objects (manifests.ts), its log streamed line by line while it runs, and its outcome, blamed on
// the limit it hit when it hit one. The Job is named from the run, so a worker killed mid-run finds
// it again instead of starting a second; a cancel deletes it in the foreground and waits until its
// pod has stopped. Nothing of the run is ever read from a file it wrote: only its log, through the
// API, with caps.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  Log,
  NetworkingV1Api,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { isIP } from 'node:net';
import { MERGE_PATCH } from '../../shared/merge-patch.js';
import { Writable } from 'node:stream';
import { releaseClusterLease, takeClusterLease } from './cluster-lease.js';
import { BoundedLines } from './log-lines.js';
import { bundleSecret, CONTAINER, runJob, runNetworkPolicy, type RunRequest } from './manifests.js';
import { RUNNER_NAMESPACE_LABEL, type RunnerSettings } from '../../shared/runner-settings.js';

export interface RunnerDeps {
  kc: KubeConfig;
  settings: RunnerSettings;
}

export interface RunEnd {
  /** The container's exit code; undefined when it never ran to an exit. */
  exitCode?: number;
  /** The limit it hit, as a sentence: `ran past its deadline of 7200 s`. */
  limit?: string;
  /** Bytes of log read, and bytes dropped from over-long lines. */
  logBytes: number;
  droppedBytes: number;
}

const status = (err: unknown) => (err as { code?: number }).code;
const body = (err: unknown) => {
  const e = err as { body?: unknown; message?: string };
  if (typeof e.body === 'string') {
    try {
      return (JSON.parse(e.body) as { message?: string }).message ?? e.body;
    } catch {
      return e.body;
    }
  }
  return (e.body as { message?: string } | undefined)?.message ?? e.message ?? String(err);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const POLL_MS = 1_000;
/** Waiting reasons that no wait cures. */
const STUCK = new Set([
  'ErrImageNeverPull',
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

export function createRunner(deps: RunnerDeps) {
  const core = deps.kc.makeApiClient(CoreV1Api);
  const batch = deps.kc.makeApiClient(BatchV1Api);
  const networking = deps.kc.makeApiClient(NetworkingV1Api);
  const coordination = deps.kc.makeApiClient(CoordinationV1Api);
  const { settings } = deps;
  const namespace = settings.namespace;
  const lease = { coordination, batch, namespace };

  /** Creates what the run needs, unless an earlier attempt of the same run did. */
  async function start(request: RunRequest): Promise<V1Job> {
    const existing = await jobOf(request.name);
    if (existing && !(finished(existing) && (await lost(request.name)))) return existing;
    if (existing) {
      // The run was lost with its node (its kubelet stopped under it), not failed by what it ran:
      // it starts over, as a run that died with its worker did.
      await stop(request.name);
    }
    const refused = (what: string, err: unknown) =>
      ApplicationFailure.create({
        message:
          `the API server refused the runner's ${what} in namespace ${namespace} ` +
          `(${status(err) ?? 'no answer'}: ${body(err)}); the worker must be allowed to create ` +
          `Jobs, Secrets and NetworkPolicies there, within its quota, and the namespace labelled ` +
          `${RUNNER_NAMESPACE_LABEL}=true for its bundle Secrets`,
        type: 'RunnerRefused',
        nonRetryable: status(err) === 403 || status(err) === 422,
      });
    const create = async (what: string, make: () => Promise<unknown>) => {
      try {
        await make();
      } catch (err) {
        if (status(err) !== 409) throw refused(what, err);
      }
    };
    await create('NetworkPolicy', () =>
      networking.createNamespacedNetworkPolicy({
        namespace,
        body: runNetworkPolicy(request, settings),
      }),
    );
    await create('Secret', () =>
      core.createNamespacedSecret({ namespace, body: bundleSecret(request, settings) }),
    );
    let job: V1Job;
    try {
      job = await batch.createNamespacedJob({ namespace, body: runJob(request, settings) });
    } catch (err) {
      if (status(err) !== 409) throw refused('Job', err);
      job = await batch.readNamespacedJob({ name: request.name, namespace });
    }
    // The Job owns its bundle and its policy: deleting it (or its TTL) takes them along.
    const owner = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      name: request.name,
      uid: job.metadata!.uid!,
      controller: true,
      blockOwnerDeletion: true,
    };
    const patch = { metadata: { ownerReferences: [owner] } };
    await core.patchNamespacedSecret({ name: request.name, namespace, body: patch }, MERGE_PATCH);
    await networking.patchNamespacedNetworkPolicy(
      { name: request.name, namespace, body: patch },
      MERGE_PATCH,
    );
    return job;
  }

  async function podOf(name: string): Promise<V1Pod | undefined> {
    const pods = await core.listNamespacedPod({
      namespace,
      labelSelector: `batch.kubernetes.io/job-name=${name}`,
    });
    return pods.items[0];
  }

  async function jobOf(name: string): Promise<V1Job | undefined> {
    try {
      return await batch.readNamespacedJob({ name, namespace });
    } catch (err) {
      if (status(err) === 404) return undefined;
      throw err;
    }
  }

  /** Whether a finished run ended because its pod was lost rather than by its own exit. */
  async function lost(name: string): Promise<boolean> {
    const pod = await podOf(name);
    if (!pod) return true;
    const terminated = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER)?.state
      ?.terminated;
    const disrupted = pod.status?.conditions?.some(
      (c) => c.type === 'DisruptionTarget' && c.status === 'True',
    );
    return !!disrupted || terminated?.reason === 'ContainerStatusUnknown';
  }

  async function gone(name: string) {
    for (let i = 0; i < 120 && (await jobOf(name)); i++) await sleep(500);
  }

  /**
   * Stops a run that may still be running: deletes it and waits until its Job is gone. A
   * foreground deletion keeps the Job until its Pod is gone, which the kubelet confirms only once
   * the container has stopped (ansible-playbook is killed after its grace period): the run has
   * then really stopped, before a cancel is answered and the cluster's Lease released.
   */
  async function stop(name: string) {
    await remove(name);
    await gone(name);
  }

  /** Deletes the run's Job, its Pod first (foreground), and its bundle at once. */
  async function remove(name: string) {
    await batch
      .deleteNamespacedJob({ name, namespace, propagationPolicy: 'Foreground' })
      .catch((err: unknown) => {
        if (status(err) !== 404) throw err;
      });
    await core.deleteNamespacedSecret({ name, namespace }).catch((err: unknown) => {
      if (status(err) !== 404) throw err;
    });
    await networking.deleteNamespacedNetworkPolicy({ name, namespace }).catch((err: unknown) => {
      if (status(err) !== 404) throw err;
    });
  }

  /** Waits until the run's container has started (or the run ended without starting). */
  async function started(request: RunRequest, signal: AbortSignal): Promise<V1Pod | undefined> {
    let unschedulableSince: number | undefined;
    for (;;) {
      signal.throwIfAborted();
      const job = await jobOf(request.name);
      if (!job) throw ApplicationFailure.retryable(`the runner Job ${request.name} was deleted`);
      const pod = await podOf(request.name);
      const container = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER);
      if (container?.state?.running || container?.state?.terminated) return pod;
      if (finished(job)) return pod;
      const waiting = container?.state?.waiting;
      if (waiting?.reason && STUCK.has(waiting.reason)) {
        await remove(request.name);
        throw ApplicationFailure.nonRetryable(
          `the runner cannot start ${request.what}: ${waiting.reason}: ${waiting.message ?? ''} ` +
            `(image ${settings.image}: it must be on the nodes that run the runners, or pullable)`,
          'RunnerUnavailable',
        );
      }
      const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled');
      if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
        unschedulableSince ??= Date.now();
        if (Date.now() - unschedulableSince > settings.unschedulableSeconds * 1000) {
          await remove(request.name);
          throw ApplicationFailure.nonRetryable(
            `no node can run ${request.what} (waited ${settings.unschedulableSeconds} s): ` +
              `${scheduled.message ?? 'unschedulable'}; the runner needs a node` +
              (settings.nodeSelector ? ` labelled ${JSON.stringify(settings.nodeSelector)}` : '') +
              ' with room for its requests',
            'RunnerUnavailable',
          );
        }
      } else unschedulableSince = undefined;
      await sleep(POLL_MS);
    }
  }

  /**
   * Streams the container's log into `onLine` until the container has exited, resuming where it
   * broke off; stops the run when it writes more than the cap.
   */
  async function follow(
    request: RunRequest,
    podName: string,
    onLine: (line: string) => void,
    signal: AbortSignal,
  ): Promise<{ lines: BoundedLines; overCap: boolean }> {
    let lastStamp = '';
    let overCap = false;
    const lines = new BoundedLines((stamped) => {
      // Every whole line starts with its RFC 3339 time; a resumed stream repeats some.
      const space = stamped.indexOf(' ');
      const stamp = space > 0 ? stamped.slice(0, space) : '';
      if (stamp && stamp <= lastStamp) return;
      if (stamp) lastStamp = stamp;
      onLine(space > 0 ? stamped.slice(space + 1) : stamped);
    });
    for (;;) {
      signal.throwIfAborted();
      const done = new Promise<void>((resolve) => {
        const sink = new Writable({
          write(chunk: Buffer, _encoding, next) {
            lines.feed(chunk);
            if (lines.total > settings.maxLogBytes) {
              overCap = true;
              resolve();
            }
            next();
          },
          final(next) {
            resolve();
            next();
          },
        });
        sink.on('error', () => resolve());
        // The response stream client-node pipes in is never handed out, and pipe() forwards no
        // errors: an error there (the abort below while the run still writes, a connection
        // reset) would be an unhandled 'error' event, which ends the worker. Its source is handed
        // to the sink as it is piped: the stream ends there, as if the log had.
        sink.on('pipe', (source: NodeJS.ReadableStream) => source.on('error', () => resolve()));
        void (async () => {
          const stop = await new Log(deps.kc)
            .log(namespace, podName, CONTAINER, sink, {
              follow: true,
              timestamps: true,
              ...(lastStamp ? { sinceTime: lastStamp.replace(/\.\d+/, '') } : {}),
            })
            .catch(() => undefined);
          if (!stop) return resolve();
          // pipe() forwards no errors: watch the container, and stop reading once it has exited
          // and the log has gone quiet.
          let quiet = 0;
          let seen = lines.total;
          for (;;) {
            await sleep(POLL_MS);
            if (overCap || signal.aborted) break;
            if (lines.total !== seen) {
              seen = lines.total;
              quiet = 0;
              continue;
            }
            const pod = await podOf(request.name).catch(() => undefined);
            const state = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER)?.state;
            if (!pod || state?.terminated) quiet++;
            if (quiet >= 3) break;
          }
          stop.abort();
          resolve();
        })();
      });
      await done;
      if (overCap) return { lines, overCap };
      const pod = await podOf(request.name);
      const state = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER)?.state;
      if (!pod || state?.terminated || !state?.running) {
        lines.end();
        return { lines, overCap };
      }
      await sleep(POLL_MS);
    }
  }

  /** The run's end, once its Job is finished: the exit code, or the limit it hit. */
  async function outcome(
    request: RunRequest,
    signal: AbortSignal,
  ): Promise<Omit<RunEnd, 'logBytes' | 'droppedBytes'>> {
    for (let waited = 0; ; waited++) {
      // A cancel deletes the Job: its end is never read then, nor of a Job deleted under it.
      signal.throwIfAborted();
      const job = await jobOf(request.name);
      if (!job) {
        throw ApplicationFailure.retryable(
          `the runner Job ${request.name} was deleted before its end was read`,
        );
      }
      const pod = await podOf(request.name);
      const container = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER);
      const exit = container?.state?.terminated;
      const failedCondition = job?.status?.conditions?.find(
        (c) => c.type === 'Failed' && c.status === 'True',
      );
      if (pod?.status?.reason === 'Evicted') {
        return { limit: `was evicted: ${pod.status.message ?? 'no reason given'}` };
      }
      if (failedCondition?.reason === 'DeadlineExceeded') {
        return { limit: `ran past its deadline of ${request.deadlineSeconds} s` };
      }
      if (exit?.reason === 'OOMKilled') {
        return {
          exitCode: exit.exitCode,
          limit: `was killed at its memory limit of ${settings.resources.memoryLimit}`,
        };
      }
      if (exit && (finished(job) || waited > 10)) return { exitCode: exit.exitCode };
      if (job && finished(job) && !exit) {
        return { limit: `ended without running: ${failedCondition?.message ?? 'no reason given'}` };
      }
      await sleep(POLL_MS);
    }
  }

  return {
    /**
     * Runs `request` to its end. `onLine` gets each line of its log (bounded); the caller
     * heartbeats. Throws PlaybookBusy while another run holds the cluster.
     */
    async run(
      request: RunRequest,
      onLine: (line: string) => void,
      signal: AbortSignal,
    ): Promise<RunEnd> {
      const bad = request.nodeAddresses.filter((address) => !isIP(address));
      if (bad.length) {
        throw ApplicationFailure.nonRetryable(
          `the runner reaches nodes by IP address only (its network policy lists them), not ${bad.join(', ')}`,
          'RunnerRefused',
        );
      }
      await takeClusterLease(lease, request.cluster, request.name, request.what);
      const onCancel = () => void remove(request.name).catch(() => undefined);
      signal.addEventListener('abort', onCancel);
      try {
        await start(request);
        const pod = await started(request, signal);
        const followed = pod
          ? await follow(request, pod.metadata!.name!, onLine, signal)
          : undefined;
        signal.throwIfAborted();
        const logBytes = followed?.lines.total ?? 0;
        const droppedBytes = followed?.lines.dropped ?? 0;
        if (followed?.overCap) {
          await stop(request.name);
          return {
            limit: `wrote more than ${settings.maxLogBytes} bytes of log (the runner's log cap)`,
            logBytes,
            droppedBytes,
          };
        }
        const end = await outcome(request, signal);
        await remove(request.name);
        return { ...end, logBytes, droppedBytes };
      } finally {
        signal.removeEventListener('abort', onCancel);
        if (signal.aborted) await stop(request.name).catch(() => undefined);
        await releaseClusterLease(lease, request.cluster, request.name).catch(() => undefined);
      }
    },
  };
}

export type Runner = ReturnType<typeof createRunner>;

function finished(job: V1Job | undefined): boolean {
  return !!job?.status?.conditions?.some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}
