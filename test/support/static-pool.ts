// A static pool on real components: sshd hosts in their own namespaces, their admin keys as
// Secrets in the engine namespace, the OTP service, and a worker and bridge configured for it.
import { expect } from '@jest/globals';
import { join } from 'node:path';
import { startOtpService, type OtpService } from '../../local-stack/otp-service.js';
import { freePort } from '../../local-stack/ports.js';
import { waitFor } from '../../local-stack/process.js';
import { startSshHosts, type SshHost, type SshHostPool } from '../../local-stack/ssh-hosts.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { allocatorState } from '../../shared/contracts/allocator.js';
import type { AllocationSummary } from '../../shared/contracts/allocator.js';
import { startBridge, startWorker, type EngineProcess } from './engine.js';
import { testEnv, uniqueSuffix, type TemporalTarget } from './env.js';
import { diagnoseWorkflow } from './workflow-diagnosis.js';
import { createScope, type TestScope } from './scope.js';

/** The engine's resync and garbage-collection grace, short: what a test of clean-up waits for. */
export const SHORT_GC_PERIODS = {
  HOSTFLOW_RESYNC_SECONDS: '5',
  HOSTFLOW_TASKRUN_GC_GRACE_SECONDS: '2',
} as const;

export interface StaticPool {
  scope: TestScope;
  hosts: SshHost[];
  platform: string;
  otp: OtpService;
  worker: EngineProcess;
  bridge: EngineProcess;
  /** Each process's /metrics URL. */
  metrics: { worker: string; bridge: string; otp: string };
  /** host-config entries for `hosts` (by index) on `platform`, with their admin Secrets. */
  hostEntries(
    specs: Array<{
      host: number;
      concurrency?: number;
      secret?: string;
      name?: string;
      platform?: string;
      serves?: 'builds' | 'machines';
      /** host-key: default the host's own; null: none (trusted on first use). */
      hostKey?: string | null;
    }>,
  ): Record<string, string>;
  /** A Secret holding `key` as the admin key, e.g. a wrong one. */
  adminSecret(name: string, key: string): Promise<void>;
  restartWorker(kill?: boolean): Promise<void>;
  /** Stops the bridge (nothing starts workflows) until `startBridge`. */
  stopBridge(): Promise<void>;
  startBridge(): Promise<void>;
  /** SIGKILLs the OTP service; `startOtp` brings it back at the same address with its state. */
  killOtp(): Promise<void>;
  startOtp(): Promise<void>;
  /** Starts the bridge again with these settings added (e.g. a small TaskRun history limit). */
  restartBridgeWith(env: NodeJS.ProcessEnv): Promise<void>;
  /** Starts the worker again with these settings added (e.g. short GC periods). */
  restartWorkerWith(env: NodeJS.ProcessEnv): Promise<void>;
  /** A second worker beside the first, configured as it is but for these settings (the caller stops it). */
  startWorkerAlongside(env: NodeJS.ProcessEnv): Promise<EngineProcess>;
  buildUsers(host: SshHost): Promise<string[]>;
  /** Counts the host's build users every 100 ms; `most` stops and says the most seen at once. */
  watchBuildUsers(host: SshHost): { most(): Promise<number> };
  allocator(platform?: string): Promise<AllocationSummary>;
  /** The activities a run of the platform's allocator scheduled, by type. */
  allocatorActivities(runId: string): Promise<string[]>;
  /** Completes these TaskRuns and waits until their Secrets, slots and build users are gone. */
  endTaskRuns(names: string[]): Promise<void>;
  dispose(): Promise<void>;
}

export interface ProcessIdentities {
  worker: string;
  bridge: string;
  otp: string;
}

export async function createStaticPool(
  prefix: string,
  hostCount = 2,
  env: {
    worker?: NodeJS.ProcessEnv;
    bridge?: NodeJS.ProcessEnv;
    longNamespace?: boolean;
    /** Where the OTP service listens (default 127.0.0.1): the node's address, for build pods. */
    otpAddress?: string;
    /** Who each process is in the cluster (kubeconfig files), made once the scope exists. */
    identities?: (scope: TestScope) => Promise<ProcessIdentities>;
    /** Another Temporal than the suite's (a production-shaped server). */
    temporal?: TemporalTarget;
  } = {},
): Promise<StaticPool> {
  const sfx = uniqueSuffix();
  const platform = `linux/${prefix}-${sfx}`;
  const scope = await createScope(prefix, undefined, {
    longNamespace: env.longNamespace,
    temporal: env.temporal,
  });
  const started: Array<{ stop(): Promise<void> }> = [];
  const undo = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    await scope.dispose();
  };
  let pool: SshHostPool;
  let otp: OtpService;
  let worker: EngineProcess;
  let bridge: EngineProcess;
  const [workerMetrics, bridgeMetrics, otpMetrics] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
  ]);
  const metricsEnv = (port: number) => ({ HOSTFLOW_METRICS_ADDRESS: `127.0.0.1:${port}` });
  const identities = await env.identities?.(scope);
  const kubeconfigEnv = (kind: 'worker' | 'bridge') =>
    identities ? { KUBECONFIG: identities[kind] } : {};
  const otpOptions = {
    stateDir: join(testEnv('stateDir'), `otp-${prefix}-${sfx}`),
    kubeconfig: identities?.otp ?? testEnv('kubeconfig'),
    namespace: scope.otpNamespace,
    logFile: join(testEnv('stateDir'), 'logs', `otp-${scope.namespace}.log`),
    metricsAddress: `127.0.0.1:${otpMetrics}`,
    address: env.otpAddress,
    port: await freePort(env.otpAddress),
  };
  const temporalEnv = env.temporal
    ? { TEMPORAL_ADDRESS: env.temporal.address, TEMPORAL_NAMESPACE: env.temporal.namespace }
    : {};
  let workerExtraEnv: NodeJS.ProcessEnv = {
    ...temporalEnv,
    ...kubeconfigEnv('worker'),
    ...env.worker,
  };
  let bridgeEnv: NodeJS.ProcessEnv = { ...temporalEnv, ...kubeconfigEnv('bridge'), ...env.bridge };
  try {
    pool = await startSshHosts({
      count: hostCount,
      stateDir: join(testEnv('stateDir'), `ssh-${prefix}-${sfx}`),
      prefix: `${prefix.slice(0, 4)}${sfx.slice(0, 4)}`,
    });
    started.push(pool);
    otp = await startOtpService(otpOptions);
    started.push({ stop: () => otp.stop() });
    for (const [i, host] of pool.hosts.entries())
      await adminSecret(scope, `admin-${i}`, host.adminPrivateKey);
    worker = await startWorker(scope, {
      ...otp.workerEnv,
      ...metricsEnv(workerMetrics),
      ...workerExtraEnv,
    });
    started.push({ stop: () => worker.stop() });
    bridge = await startBridge(scope, { ...metricsEnv(bridgeMetrics), ...bridgeEnv });
  } catch (err) {
    await undo();
    throw err;
  }
  async function restartWorker(kill = false): Promise<void> {
    await (kill ? worker.kill() : worker.stop());
    worker = await startWorker(scope, {
      ...otp.workerEnv,
      ...metricsEnv(workerMetrics),
      ...workerExtraEnv,
    });
  }
  const handle = (p: string, runId?: string) =>
    scope.temporal.client.workflow.getHandle(WORKFLOW_ID.allocator(p), runId);

  const staticPool: StaticPool = {
    scope,
    hosts: pool.hosts,
    platform,
    get otp() {
      return otp;
    },
    get worker() {
      return worker;
    },
    get bridge() {
      return bridge;
    },
    metrics: {
      worker: `http://127.0.0.1:${workerMetrics}/metrics`,
      bridge: `http://127.0.0.1:${bridgeMetrics}/metrics`,
      otp: `http://127.0.0.1:${otpMetrics}/metrics`,
    },
    hostEntries(specs) {
      const data: Record<string, string> = {};
      for (const spec of specs) {
        const host = pool.hosts[spec.host]!;
        const name = spec.name ?? `h${spec.host + 1}`;
        data[`host.${name}.address`] = host.address;
        data[`host.${name}.user`] = host.adminUser;
        data[`host.${name}.platform`] = spec.platform ?? platform;
        data[`host.${name}.secret`] = spec.secret ?? `admin-${spec.host}`;
        data[`host.${name}.concurrency`] = String(spec.concurrency ?? 2);
        if (spec.serves) data[`host.${name}.serves`] = spec.serves;
        // as a platform team lists its hosts' keys; `hostKey: null` leaves it out (first use)
        const hostKey = spec.hostKey === undefined ? host.hostPublicKey : spec.hostKey;
        if (hostKey !== null) data[`host.${name}.host-key`] = hostKey;
      }
      return data;
    },
    adminSecret: (name, key) => adminSecret(scope, name, key),
    restartWorker,
    stopBridge: () => bridge.stop(),
    async startBridge() {
      bridge = await startBridge(scope, { ...metricsEnv(bridgeMetrics), ...bridgeEnv });
    },
    async restartBridgeWith(env) {
      await bridge.stop();
      bridgeEnv = { ...bridgeEnv, ...env };
      bridge = await startBridge(scope, { ...metricsEnv(bridgeMetrics), ...bridgeEnv });
    },
    startWorkerAlongside: (env) =>
      startWorker(scope, { ...otp.workerEnv, ...workerExtraEnv, ...env }, { label: 'second' }),
    async restartWorkerWith(env) {
      workerExtraEnv = { ...temporalEnv, ...kubeconfigEnv('worker'), ...env };
      await restartWorker();
    },
    async killOtp() {
      try {
        process.kill(-otp.process.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await otp.process.exited;
    },
    async startOtp() {
      otp = await startOtpService(otpOptions);
    },
    async buildUsers(host) {
      const { stdout } = await host.exec(['getent', 'passwd']);
      return stdout
        .split('\n')
        .map((line) => line.split(':')[0]!)
        .filter((user) => /^u-[0-9a-f]{12}$/.test(user));
    },
    watchBuildUsers(host) {
      let most = 0;
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          most = Math.max(most, (await staticPool.buildUsers(host)).length);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      return {
        async most() {
          watching = false;
          await watcher;
          return most;
        },
      };
    },
    async allocatorActivities(runId) {
      const { events } = await handle(platform, runId).fetchHistory();
      return (events ?? []).flatMap((e) => {
        const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
        return name ? [name] : [];
      });
    },
    async endTaskRuns(names) {
      for (const name of names) await scope.taskRuns.complete(name);
      for (const name of names) await scope.taskRuns.waitForSecretGone(name);
      await waitFor('every slot free', async () =>
        (await staticPool.allocator()).inUse === 0 ? true : undefined,
      );
      for (const host of pool.hosts) expect(await staticPool.buildUsers(host)).toEqual([]);
    },
    async allocator(p = platform) {
      const allocator = handle(p);
      try {
        return (await allocator.query(allocatorState)) as AllocationSummary;
      } catch (err) {
        // Why it does not answer, with what the worker last said: a flake must say which.
        const why = err instanceof Error ? err.message : String(err);
        throw new Error(
          `the allocator of ${p} does not answer (${why})\n${await diagnoseWorkflow(allocator)}` +
            `\nworker's last output:\n${worker.tail(40)}`,
          { cause: err },
        );
      }
    },
    async dispose() {
      await Promise.all([bridge.stop(), worker.stop(), otp.stop()]);
      await pool.stop();
      await scope.dispose();
    },
  };
  return staticPool;
}

async function adminSecret(scope: TestScope, name: string, key: string): Promise<void> {
  await scope.kube.core.createNamespacedSecret({
    namespace: scope.engineNamespace,
    body: { metadata: { name }, stringData: { id_rsa: key } },
  });
}
