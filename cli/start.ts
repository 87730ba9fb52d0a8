// `hostflow start`: brings up whatever is not given (Temporal dev server, kube-apiserver),
// then the worker and the bridge as supervised child processes. Ctrl-C stops all of it; the
// state directory keeps Temporal and Kubernetes state for the next start.
import { KubeConfig, CoreV1Api } from '@kubernetes/client-node';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  DEFAULT_ENGINE_NAMESPACE,
  DEFAULT_OTP_NAMESPACE,
  HOST_CONFIG_NAME,
  LABELS,
} from '../platform-config/contract.js';
import { ensureNamespace, waitForLockPolicy } from '../local-stack/cluster-setup.js';
import { LOCAL_PORTS } from '../local-stack/defaults.js';
import { engineCommand } from '../local-stack/engine.js';
import { LOCAL_ENGINE_USER, startKubeApiServer } from '../local-stack/kube-apiserver.js';
import { nodeAddress } from '../local-stack/kubelet.js';
import { startLocalRunner } from '../local-stack/runner.js';
import { startCapiCore } from '../local-stack/capi-core.js';
import { ensureWorkloadCluster } from '../local-stack/workload-cluster.js';
import { localKubespray } from '../local-stack/kubespray-overlay.js';
import { planLockAudit, startLockAudit } from '../local-stack/lock-audit.js';
import { LOCAL_STATE_DIR } from '../local-stack/paths.js';
import { assertPortsFree } from '../local-stack/ports.js';
import { startTemporalDevServer, loadTemporalDevConfig } from '../local-stack/temporal.js';
import { startTemporalServer } from '../local-stack/temporal-server.js';
import { planOtpService } from '../local-stack/otp-service.js';
import { APT_STAND_IN_ON_HOST } from '../local-stack/ssh-hosts.js';
import { startDemoCloud } from './demo-cloud.js';
import { startDemoHosts } from './demo-hosts.js';
import { startDemoNodes } from './demo-nodes.js';
import { prettyLine } from './pretty-log.js';
import { printBanner } from './start-banner.js';
import { supervise, type Supervised } from './supervise.js';
import { oneLineError } from '../shared/kube-errors.js';
import type { StartOptions } from './start-options.js';

/** After a failed start, which stops what it started and leaves the state as it was. */
const whatToDo = (stateDir: string) =>
  `nothing it started is left running, and ${stateDir} is as it was: fix what the line above ` +
  `names (the components' logs are in ${join(stateDir, 'logs')}) and start again; or remove ` +
  `${stateDir} to start from a clean slate, losing the local cluster and the workflow histories`;
/** The Cluster API Cluster the examples' Machines join: the local cluster itself. */
const DEMO_CLUSTER = { namespace: 'demo', name: 'demo' };
const DEMO_HOST_CONFIG = { 'local-platforms': 'linux/amd64' };
/** The processes' names line up in the log lines shown (otp-server and lock-audit are longest). */
const NAME_WIDTH = 'otp-server'.length;

export async function runStart(options: StartOptions): Promise<number> {
  const stateDir = resolve(options.stateDir ?? LOCAL_STATE_DIR);
  const logDir = join(stateDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const stops: Array<() => Promise<void>> = [];
  let stopping = false;
  let stoppedAll = Promise.resolve();
  /** Stops what has started, newest first; one stop at a time, however often it is asked. */
  const stopAll = (): Promise<void> =>
    (stoppedAll = stoppedAll.then(async () => {
      while (stops.length > 0) {
        await stops.pop()!().catch((err: unknown) =>
          console.error(`hostflow: ${(err as Error).message ?? String(err)}`),
        );
      }
    }));
  /**
   * Registers what just started. Once a stop was asked for (Ctrl-C while it comes up), what
   * finishes starting after it is stopped too, and the start goes no further.
   */
  const started = (stop: () => Promise<void>): void => {
    stops.push(stop);
    if (stopping) throw new StartInterrupted();
  };
  const signalled = new Promise<void>((asked) => {
    process.on('SIGINT', () => onSignal(asked));
    process.on('SIGTERM', () => onSignal(asked));
  });
  const onSignal = (asked: () => void) => {
    if (stopping) {
      // A second Ctrl-C: the user will not wait for what is still starting.
      console.log('hostflow: stopped at once; what was still starting may be left running');
      process.exit(130);
    }
    stopping = true;
    console.log('\nhostflow: stopping…');
    void stopAll();
    asked();
  };

  /** Waits for a process it started to be ready, or gives up once a stop is asked for. */
  const unlessStopped = <T>(ready: Promise<T>): Promise<T> =>
    Promise.race([
      ready,
      signalled.then(() => {
        throw new StartInterrupted();
      }),
    ]);

  const startUp = async (): Promise<void> => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    const engineNamespace = env.HOSTFLOW_NAMESPACE || DEFAULT_ENGINE_NAMESPACE;
    const otpNamespace = env.HOSTFLOW_OTP_NAMESPACE || DEFAULT_OTP_NAMESPACE;
    let uiUrl = 'your Temporal UI';
    let demoHosts: string[] = [];
    // Where build pods reach the OTP service: the local node's address when it runs here.
    let otpAddress: string | undefined;

    const temporalAddress = options.temporalAddress ?? process.env.TEMPORAL_ADDRESS;
    if (temporalAddress) {
      Object.assign(env, {
        TEMPORAL_ADDRESS: temporalAddress,
        TEMPORAL_NAMESPACE: options.temporalNamespace ?? env.TEMPORAL_NAMESPACE,
        TEMPORAL_API_KEY: options.temporalApiKey ?? env.TEMPORAL_API_KEY,
        TEMPORAL_TLS: options.temporalTls ? 'true' : env.TEMPORAL_TLS,
        TEMPORAL_TLS_CLIENT_CERT_PATH: options.temporalTlsCert ?? env.TEMPORAL_TLS_CLIENT_CERT_PATH,
        TEMPORAL_TLS_CLIENT_KEY_PATH: options.temporalTlsKey ?? env.TEMPORAL_TLS_CLIENT_KEY_PATH,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH:
          options.temporalTlsCa ?? env.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
      });
    } else if (options.temporalServer) {
      await assertPortsFree('Temporal server', [loadTemporalDevConfig().port]);
      console.log(
        'hostflow: starting PostgreSQL and the Temporal server (the first start builds it: 5-15 min)…',
      );
      const temporal = await startTemporalServer({
        persist: true,
        stateDir: join(stateDir, 'temporal-server'),
        fixedPorts: true,
        logDir,
        restart: true,
      });
      started(temporal.stop);
      uiUrl = `none beside the Temporal server ${temporal.version}: \`temporal workflow list --address ${temporal.address}\``;
      Object.assign(env, {
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
      });
    } else {
      const config = loadTemporalDevConfig();
      await assertPortsFree('Temporal dev server', [
        config.port,
        config.uiPort,
        config.metricsPort,
      ]);
      console.log('hostflow: starting the Temporal dev server…');
      const temporal = await startTemporalDevServer({
        persist: true,
        stateDir,
        fixedPorts: true,
        logDir,
        restart: true,
      });
      started(temporal.stop);
      uiUrl = temporal.uiUrl;
      Object.assign(env, {
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
      });
    }

    let kubeconfigPath = options.kubeconfig ?? process.env.KUBECONFIG;
    // The local cluster's worker and bridge run as their own user, not as kubectl's: the Lock
    // policies exempt the engine's identity, and a person's kubectl must not share it.
    let engineKubeconfigPath: string | undefined;
    if (options.kubeconfig || options.context) {
      if (options.context) env.HOSTFLOW_KUBE_CONTEXT = options.context;
    } else {
      await assertPortsFree('kube-apiserver', [
        LOCAL_PORTS.kubeApi,
        LOCAL_PORTS.etcd,
        LOCAL_PORTS.lockAudit,
      ]);
      console.log(
        'hostflow: starting kube-apiserver, etcd and kube-controller-manager (the first start builds them: 15-30 min)…',
      );
      const lockAudit = await planLockAudit(join(stateDir, 'lock-audit'), LOCAL_PORTS.lockAudit);
      const kube = await startKubeApiServer({
        stateDir: join(stateDir, 'kube'),
        apiPort: LOCAL_PORTS.kubeApi,
        etcdPort: LOCAL_PORTS.etcd,
        logDir,
        restart: true,
        audit: lockAudit.sink,
        resourcesFor: LOCAL_ENGINE_USER,
      });
      started(kube.stop);
      kubeconfigPath = kube.kubeconfigPath;
      engineKubeconfigPath = kube.engineKubeconfigPath;
      await prepareLocalCluster(kubeconfigPath, engineNamespace);
      // Counts Lock denials and writes Lock status from the API server's audit events.
      const audit = await startLockAudit(lockAudit, {
        kubeconfig: kubeconfigPath,
        logFile: join(logDir, 'lock-audit.log'),
        restart: true,
        echo: (line) => console.log(prettyLine(line, 'lock-audit', NAME_WIDTH)),
      });
      started(audit.stop);
      console.log('hostflow: starting the demo SSH hosts…');
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      const demo = await startDemoHosts({
        stateDir: join(stateDir, 'ssh-hosts'),
        kubeConfig: kc,
        engineNamespace,
      });
      started(demo.stop);
      demoHosts = demo.hosts.map((h) => `${h.name} ${h.address}`);
      console.log('hostflow: starting the demo Nodes (a MachineConfigPool of three sshd hosts)…');
      const demoPool = await startDemoNodes({
        stateDir: join(stateDir, 'demo-nodes'),
        kubeConfig: kc,
        engineNamespace,
      });
      started(demoPool.stop);
      console.log('hostflow: starting the demo cloud (moto EC2 whose instances boot sshd hosts)…');
      await assertPortsFree('moto (demo cloud)', [LOCAL_PORTS.moto]);
      const cloud = await startDemoCloud({
        stateDir: join(stateDir, 'demo-cloud'),
        logDir,
        port: LOCAL_PORTS.moto,
        kubeConfig: kc,
        engineNamespace,
      });
      started(cloud.stop);
      env.HOSTFLOW_AWS_ENDPOINT = cloud.endpoint;
      console.log(
        'hostflow: starting Cluster API core and the Cluster demo (the first start builds it: about 5 min)…',
      );
      const capi = await startCapiCore({
        kc,
        kubeconfigPath,
        stateDir: join(stateDir, 'capi-core'),
        logFile: join(logDir, 'capi-core.log'),
      });
      started(capi.stop);
      await ensureNamespace(kc, DEMO_CLUSTER.namespace);
      await ensureWorkloadCluster(kc, { ...DEMO_CLUSTER, kubeconfigPath });
      // Every ansible run is a Job: the local node runs them, unless this stack is told to send
      // them to a cluster that already has the machine's one kubelet (the tests' own).
      if (!env.HOSTFLOW_RUNNER_KUBECONFIG) {
        console.log(
          'hostflow: starting the local node (kubelet, kube-scheduler, containerd) and the runner image…',
        );
        // Awaited whole, then registered: a Ctrl-C meanwhile stops it as it registers.
        const runner = await startLocalRunner({
          bin: kube.bin,
          apiUrl: kube.url,
          ca: kube.ca,
          admin: kc,
          stateDir,
          logDir,
          restart: true,
        });
        started(runner.stop);
        for (const [name, value] of Object.entries(runner.env)) env[name] ??= value;
        otpAddress = await nodeAddress();
      }
    }
    const engineKubeconfig = engineKubeconfigPath ?? kubeconfigPath;
    if (engineKubeconfig) env.KUBECONFIG = engineKubeconfig;
    // Provisionings run the kubespray stand-in on the demo hosts unless told otherwise, laid over
    // the real release when there is one beside the repository (its checks run first).
    env.HOSTFLOW_KUBESPRAY_DIR ??= localKubespray(stateDir);
    env.HOSTFLOW_PROVISIONING_DIR ??= join(stateDir, 'clusters');
    // The demo hosts' BareMetalHosts are in the engine namespace, the examples' Provisionings in
    // demo: let Provisionings take hosts from there too.
    env.HOSTFLOW_BAREMETAL_NAMESPACES ??= engineNamespace;
    // Softwares install with the apt-get stand-in: the demo hosts share this machine's /usr.
    env.HOSTFLOW_PACKAGE_MANAGER ??= APT_STAND_IN_ON_HOST;

    if (kubeconfigPath) {
      await assertPortsFree('OTP service', [LOCAL_PORTS.otp], otpAddress);
      // Its records go in a namespace of their own, as the manifests make it.
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      if (env.HOSTFLOW_KUBE_CONTEXT) kc.setCurrentContext(env.HOSTFLOW_KUBE_CONTEXT);
      await ensureNamespace(kc, otpNamespace);
      const otp = await planOtpService({
        stateDir: join(stateDir, 'otp'),
        kubeconfig: kubeconfigPath,
        namespace: otpNamespace,
        port: LOCAL_PORTS.otp,
        address: otpAddress,
      });
      // Supervised like the worker and the bridge: restarted with back-off if it dies.
      const service = supervise('otp-server', otp.command, otp.args, {
        env: otp.env,
        logFile: join(logDir, 'otp-server.log'),
        nameWidth: NAME_WIDTH,
      });
      started(() => service.stop());
      await unlessStopped(service.ready(new RegExp(otp.readyLine)));
      Object.assign(env, otp.workerEnv);
    }

    const log = (line: string) => console.log(`hostflow: ${line}…`);
    const commands = {
      worker: await engineCommand('worker'),
      bridge: await engineCommand('bridge', log),
    };
    const processes: Supervised[] = (['worker', 'bridge'] as const).map((kind) =>
      supervise(kind, process.execPath, commands[kind].args, {
        env: { ...commands[kind].env, ...env },
        logFile: join(logDir, `${kind}.log`),
        nameWidth: NAME_WIDTH,
      }),
    );
    started(async () => {
      await Promise.all(processes.map((p) => p.stop()));
    });
    await unlessStopped(Promise.all(processes.map((p) => p.ready(/polling|watching/))));
    printBanner(uiUrl, kubeconfigPath, logDir, engineNamespace, demoHosts);
  };

  const up = startUp();
  const first = await Promise.race([
    up.then(
      () => ({ up: true as const }),
      (err: unknown) => ({ failed: err }),
    ),
    signalled.then(() => ({ signalled: true as const })),
  ]);
  if ('failed' in first && !stopping) {
    console.error(`hostflow start: ${oneLineError(first.failed)}`);
    console.error(`hostflow start: ${whatToDo(stateDir)}`);
    await stopAll();
    return 1;
  }
  if ('up' in first) await signalled;
  // Stopped while it came up: what it was starting is stopped as soon as it has started.
  await up.catch(() => undefined);
  await stopAll();
  return 0;
}

/** Ctrl-C while `hostflow start` comes up: not a failure, and not reported as one. */
class StartInterrupted extends Error {
  constructor() {
    super('stopped while starting');
  }
}

/** A fresh local cluster (its CRDs installed as it started) gets the engine namespace and a demo host-config. */
async function prepareLocalCluster(kubeconfigPath: string, engineNamespace: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  await ensureNamespace(kc, engineNamespace, { engineNamespace: true });
  await waitForLockPolicy(kc, engineNamespace);
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedConfigMap({
      namespace: engineNamespace,
      body: {
        metadata: { name: HOST_CONFIG_NAME, labels: { [LABELS.multiPlatformConfig]: 'hosts' } },
        data: DEMO_HOST_CONFIG,
      },
    });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err; // kept: the operator may have edited it
  }
}
