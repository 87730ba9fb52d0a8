// A throwaway local stack for benchmarks: the same components as the tests, in a temp dir.
// With `sshHosts`, also a static pool: real sshd hosts, their admin keys as Secrets, their
// host-config entries, and the OTP service the worker delivers build users' keys through.
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureNamespace } from '../local-stack/cluster-setup.js';
import { startEngineProcess, type EngineProcess } from '../local-stack/engine.js';
import { LOCAL_ADMIN_USER, startKubeApiServer } from '../local-stack/kube-apiserver.js';
import { startEc2Vms } from '../local-stack/ec2-vms.js';
import { startMoto } from '../local-stack/moto.js';
import { nodeAddress } from '../local-stack/kubelet.js';
import { startOtpService, type OtpService } from '../local-stack/otp-service.js';
import { startLocalRunner } from '../local-stack/runner.js';
import { startSshHosts, type SshHost } from '../local-stack/ssh-hosts.js';
import { startBenchTemporal } from './temporal.js';
import { HOST_CONFIG_NAME, LABELS } from '../platform-config/contract.js';
import { bundleWorkflows } from '../workers/bundle-workflows.js';
import { awsPlatformConfig } from './aws-platform-config.js';

export interface StaticPoolOptions {
  /** How many sshd hosts to start; each becomes host-config entry `h<i+1>`. */
  sshHosts: number;
  /** Their platform, e.g. `linux/bench`. */
  platform: string;
  /** `host.<name>.concurrency` of every host. */
  concurrency: number;
}

export interface CloudOptions {
  /** A dynamic AWS platform served by moto, whose instances become sshd hosts. */
  platform: string;
  maxInstances: number;
  bootDelayMs: number;
  onHostReady: (instanceId: string, at: number) => void;
  onProxiedCall: (params: URLSearchParams, at: number) => void;
}

export interface EngineOptions {
  /** Worker processes on the one task queue (default 1): scale-out benches. */
  workers?: number;
  /** Bridge replicas watching the same TaskRuns (default 1). */
  bridges?: number;
  /** Extra settings for every bridge, e.g. its metrics and health addresses. */
  bridgeEnv?: NodeJS.ProcessEnv;
  /**
   * The local node (a real kubelet: one per machine) for build pods, and the OTP service on its
   * address, where the pods reach it.
   */
  localNode?: boolean;
}

export interface BenchStack {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  namespace: string;
  engineNamespace: string;
  temporal: { address: string; namespace: string };
  /** The first of `workers` and of `bridges`. */
  worker: EngineProcess;
  bridge: EngineProcess;
  workers: EngineProcess[];
  bridges: EngineProcess[];
  /** Starts one more bridge (e.g. after stopping one), stopped with the stack. */
  startBridge(name: string, extraEnv?: NodeJS.ProcessEnv): Promise<EngineProcess>;
  /** Only with a static pool. */
  sshHosts: SshHost[];
  otp?: OtpService;
  /** With `localNode`: the image a build pod's step runs there. */
  buildStepImage?: string;
  stop(): Promise<void>;
}

/**
 * Starts everything, or nothing: a failure part-way stops what was started, and so does
 * SIGINT/SIGTERM at any point until `stop()` (while starting: once the step under way is done,
 * so nothing half-started is left). The processes run detached, and SSH hosts would otherwise
 * leave network namespaces behind.
 */
export async function startBenchStack(
  hostConfig: Record<string, string>,
  staticPool?: StaticPoolOptions,
  cloud?: CloudOptions,
  engine: EngineOptions = {},
): Promise<BenchStack> {
  const dir = mkdtempSync(join(tmpdir(), 'hostflow-bench-'));
  const logDir = join(dir, 'logs');
  // What was started, by layer: hostflow's processes and the OTP service, then the SSH hosts,
  // then the Kubernetes API and Temporal. Stopped top layer first; within a layer, together.
  const layers: Array<Array<() => Promise<void>>> = [[], [], []];
  const [INFRA, HOSTS, SERVICES] = [0, 1, 2] as const;
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      // Every step runs even when one fails.
      for (const layer of [...layers].reverse())
        await Promise.allSettled(layer.map((stop) => stop()));
      // BENCH_KEEP=1 keeps the logs (and state) to read after a surprising figure.
      if (process.env.BENCH_KEEP === '1') console.error(`bench: kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    })());
  let running = false;
  let interrupted: NodeJS.Signals | undefined;
  function onSignal(signal: NodeJS.Signals): void {
    if (running) {
      console.error(`bench: ${signal}, stopping the stack`);
      void stopAll().finally(() => process.exit(130));
    } else if (interrupted) {
      process.exit(130); // asked twice: leave now
    } else {
      interrupted = signal;
      console.error(`bench: ${signal}, stopping the stack once the step under way is done`);
    }
  }
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  /** Records how to stop what `starting` starts, as soon as it has started. */
  const track = <T extends { stop(): Promise<void> }>(layer: number, starting: Promise<T>) =>
    starting.then((started) => {
      layers[layer].push(() => started.stop());
      return started;
    });
  const step = async <T>(starting: Promise<T>): Promise<T> => {
    const value = await starting;
    if (interrupted) throw new Error(`${interrupted} while starting the stack`);
    return value;
  };

  try {
    const [kube, temporal] = await step(
      settled(
        track(
          INFRA,
          startKubeApiServer({
            stateDir: join(dir, 'kube'),
            ephemeral: true,
            logDir,
            resourcesFor: LOCAL_ADMIN_USER,
          }),
        ),
        track(INFRA, startBenchTemporal(logDir)),
      ),
    );
    const kc = new KubeConfig();
    kc.loadFromFile(kube.kubeconfigPath);
    const namespace = 'bench';
    const engineNamespace = 'bench-engine';
    await step(ensureNamespace(kc, namespace));
    await step(ensureNamespace(kc, engineNamespace, { engineNamespace: true }));
    const otpNamespace = 'bench-otp';
    await step(ensureNamespace(kc, otpNamespace));
    const core = kc.makeApiClient(CoreV1Api);

    const node = engine.localNode
      ? await step(
          track(
            HOSTS,
            startLocalRunner({
              bin: kube.bin,
              apiUrl: kube.url,
              ca: kube.ca,
              admin: kc,
              stateDir: join(dir, 'node'),
              logDir,
            }),
          ),
        )
      : undefined;
    const otpAddress = node ? await nodeAddress() : undefined;
    let sshHosts: SshHost[] = [];
    let otp: OtpService | undefined;
    const startOtp = () =>
      step(
        track(
          SERVICES,
          startOtpService({
            stateDir: join(dir, 'otp'),
            kubeconfig: kube.kubeconfigPath,
            namespace: otpNamespace,
            logFile: join(logDir, 'otp-server.log'),
            address: otpAddress,
          }),
        ),
      );
    const data = { ...hostConfig };
    if (staticPool) {
      const pool = await step(
        track(HOSTS, startSshHosts({ count: staticPool.sshHosts, stateDir: join(dir, 'ssh') })),
      );
      sshHosts = pool.hosts;
      otp ??= await startOtp();
      for (const [i, host] of sshHosts.entries()) {
        const name = `h${i + 1}`;
        await step(
          core.createNamespacedSecret({
            namespace: engineNamespace,
            body: {
              metadata: { name: `admin-${i}` },
              stringData: { id_rsa: host.adminPrivateKey },
            },
          }),
        );
        data[`host.${name}.address`] = host.address;
        data[`host.${name}.user`] = host.adminUser;
        data[`host.${name}.platform`] = staticPool.platform;
        data[`host.${name}.secret`] = `admin-${i}`;
        data[`host.${name}.concurrency`] = String(staticPool.concurrency);
        data[`host.${name}.host-key`] = host.hostPublicKey;
      }
    }
    let awsEndpoint: string | undefined;
    if (cloud) {
      const moto = await step(track(HOSTS, startMoto({ logDir })));
      const vms = await step(
        track(
          HOSTS,
          startEc2Vms({
            endpoint: moto.endpoint,
            stateDir: join(dir, 'ec2-vms'),
            bootDelayMs: cloud.bootDelayMs,
            pollMs: 100,
            onHostReady: cloud.onHostReady,
            onProxiedCall: cloud.onProxiedCall,
          }),
        ),
      );
      awsEndpoint = vms.proxyEndpoint;
      otp ??= await startOtp();
      const secrets = {
        'aws-creds': { 'access-key-id': 'testing', 'secret-access-key': 'testing' }, // moto's
        'vm-ssh': { id_rsa: vms.adminPrivateKey },
      };
      for (const [name, stringData] of Object.entries(secrets)) {
        await step(
          core.createNamespacedSecret({
            namespace: engineNamespace,
            body: { metadata: { name }, stringData },
          }),
        );
      }
      Object.assign(data, {
        'dynamic-platforms': cloud.platform,
        'instance-tag': 'hostflow-bench',
        ...awsPlatformConfig(cloud.platform, {
          keyName: 'bench',
          subnetId: vms.subnetId,
          maxInstances: cloud.maxInstances,
        }),
      });
    }
    await step(
      core.createNamespacedConfigMap({
        namespace: engineNamespace,
        body: {
          metadata: { name: HOST_CONFIG_NAME, labels: { [LABELS.multiPlatformConfig]: 'hosts' } },
          data,
        },
      }),
    );

    const env = {
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      KUBECONFIG: kube.kubeconfigPath,
      HOSTFLOW_NAMESPACE: engineNamespace,
    };
    // Workers load a bundle built ahead, as the image's do, not webpack at their start.
    const workflowBundle = join(dir, 'workflow-bundle.js');
    writeFileSync(workflowBundle, await step(bundleWorkflows()));
    const workerEnv = {
      ...env,
      HOSTFLOW_WORKFLOW_BUNDLE: workflowBundle,
      ...otp?.workerEnv,
      ...(awsEndpoint ? { HOSTFLOW_AWS_ENDPOINT: awsEndpoint } : {}),
    };
    // One of each keeps the names (and log files) `worker` and `bridge`; more are numbered.
    const named = (kind: string, count: number) =>
      Array.from({ length: count }, (_, i) => (count === 1 ? kind : `${kind}-${i + 1}`));
    const startBridge = (name: string, extraEnv: NodeJS.ProcessEnv = {}) =>
      track(
        SERVICES,
        startEngineProcess(
          'bridge',
          { ...env, ...engine.bridgeEnv, ...extraEnv },
          { name, logFile: join(logDir, `${name}.log`) },
        ),
      );
    const started = await Promise.allSettled([
      ...named('worker', engine.workers ?? 1).map((name) =>
        track(
          SERVICES,
          startEngineProcess('worker', workerEnv, { name, logFile: join(logDir, `${name}.log`) }),
        ),
      ),
      ...named('bridge', engine.bridges ?? 1).map((name) => startBridge(name)),
    ]);
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    if (interrupted) throw new Error(`${interrupted} while starting the stack`);
    const engines = started.map((r) => (r as PromiseFulfilledResult<EngineProcess>).value);
    const workers = engines.slice(0, engine.workers ?? 1);
    const bridges = engines.slice(workers.length);
    running = true;
    return {
      kc,
      core,
      custom: kc.makeApiClient(CustomObjectsApi),
      namespace,
      engineNamespace,
      temporal: { address: temporal.address, namespace: temporal.namespace },
      worker: workers[0]!,
      bridge: bridges[0]!,
      workers,
      bridges,
      startBridge,
      sshHosts,
      otp,
      buildStepImage: node?.buildStepImage,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** Like Promise.all, but waits for both, so nothing started is still pending when we undo. */
async function settled<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [ra, rb] = await Promise.allSettled([a, b]);
  if (ra.status === 'rejected') throw ra.reason;
  if (rb.status === 'rejected') throw rb.reason;
  return [ra.value, rb.value];
}
