// The worker process: runs workflows and activities until SIGINT/SIGTERM, then drains.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { createActivities } from '../activities/index.js';
import type { OtpDelivery } from '../activities/delivery.js';
import { OtpClient } from '../activities/otp-client.js';
import { closeSshConnections } from '../activities/ssh/connection-pool.js';
import { cloudGcStart, collectNow, leftoversGcStart } from '../shared/contracts/gc.js';
import { runsAny, runsEvery } from '../shared/families.js';
import { activityLogFields } from './activity-log-fields.js';
import { claimNamespaceForEngine } from '../runtime/namespace-claim.js';
import { watchTemporalCredentials } from '../runtime/temporal-credentials.js';
import { checkTemporalServer } from '../runtime/temporal-requirements.js';
import { serveHealth, type HealthChecks } from '../runtime/health-server.js';
import { createLogger, type Logger } from '../runtime/logger.js';
import {
  kubeConfig,
  loadSettings,
  temporalConnection,
  type Settings,
  runnerSettings,
} from '../runtime/settings.js';
import { KubeConfig } from '@kubernetes/client-node';

/** The runner's own cluster, when it has one (HOSTFLOW_RUNNER_KUBECONFIG). */
function kubeConfigFile(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}
import { temporalLogger } from './temporal-logger.js';
import { workflowCodeFor } from './workflow-code.js';
import {
  followDeployment,
  deploymentVersion,
  workerDeploymentOptions,
  type DeploymentVersion,
} from './worker-deployment.js';

/**
 * Bucket edges for the engine's histograms (workflows/metrics.ts), in seconds. The SDK's
 * defaults are millisecond edges (50 … 10000), which put every wait under 50 s in one bucket.
 */
const HISTOGRAM_BUCKETS_SECONDS: Record<string, number[]> = {
  hostflow_allocation_wait_seconds: [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
  hostflow_provisioning_seconds: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
};

export async function createWorker(
  settings: Settings,
  log: Logger,
): Promise<{
  worker: Worker;
  client: Client;
  /** The Worker Deployment version it polls as (HOSTFLOW_WORKER_DEPLOYMENT), if any. */
  version: DeploymentVersion | undefined;
  /** Sets a rotated API key on both connections. */
  setApiKey(key: string): Promise<void>;
  close(): Promise<void>;
}> {
  const kc = kubeConfig(settings);
  const options = temporalConnection(settings);
  const [connection, clientConnection] = await Promise.all([
    NativeConnection.connect(options),
    Connection.connect(options),
  ]);
  const client = new Client({
    connection: clientConnection,
    namespace: settings.TEMPORAL_NAMESPACE,
  });
  const core = kc.makeApiClient(CoreV1Api);
  // Its namespace serves this cluster alone: refused at once when another cluster's engine has it.
  await claimNamespaceForEngine(client, { kc, core }, settings);
  const activities = createActivities(
    {
      kube: {
        core,
        custom: kc.makeApiClient(CustomObjectsApi),
        engineNamespace: settings.HOSTFLOW_NAMESPACE,
        watchNamespace: settings.HOSTFLOW_WATCH_NAMESPACE || undefined,
      },
      temporal: {
        client,
        taskQueue: settings.HOSTFLOW_TASK_QUEUE,
        resyncSeconds: settings.HOSTFLOW_RESYNC_SECONDS,
      },
      otp: otpDelivery(settings),
      provisioning: {
        kubesprayDirs: settings.HOSTFLOW_KUBESPRAY_DIR,
        workDir: settings.HOSTFLOW_PROVISIONING_DIR,
        runner: runnerSettings(settings),
        kc: settings.HOSTFLOW_RUNNER_KUBECONFIG
          ? kubeConfigFile(settings.HOSTFLOW_RUNNER_KUBECONFIG)
          : kc,
        leasesFile: settings.HOSTFLOW_DHCP_LEASES_FILE,
        bareMetalNamespaces: [
          ...settings.HOSTFLOW_BAREMETAL_NAMESPACES,
          // The older single-namespace setting, as an exact name.
          ...(settings.HOSTFLOW_BAREMETAL_NAMESPACE ? [settings.HOSTFLOW_BAREMETAL_NAMESPACE] : []),
        ],
      },
      packageManager: settings.HOSTFLOW_PACKAGE_MANAGER,
      locksEnabled: runsAny(settings.HOSTFLOW_FAMILIES, 'locks'),
      imageRegistries: settings.HOSTFLOW_IMAGE_REGISTRIES,
      cloud: {
        awsEndpoint: settings.HOSTFLOW_AWS_ENDPOINT,
        ibmIamEndpoint: settings.HOSTFLOW_IBM_IAM_ENDPOINT,
        gcGraceSeconds: settings.HOSTFLOW_CLOUD_GC_GRACE_SECONDS,
      },
    },
    settings.HOSTFLOW_FAMILIES,
  );
  if (!runsEvery(settings.HOSTFLOW_FAMILIES)) {
    log.info(
      `hostflow worker: the workflows and activities of ${settings.HOSTFLOW_FAMILIES.join(', ')} ` +
        'only, their workflows bundled now' +
        (settings.HOSTFLOW_WORKFLOW_BUNDLE ? ' (the prebuilt bundle holds every family)' : ''),
    );
  }
  const workflowCode = workflowCodeFor(
    settings.HOSTFLOW_FAMILIES,
    settings.HOSTFLOW_WORKFLOW_BUNDLE,
  );
  const version = deploymentVersion(settings, workflowCode);
  const worker = await Worker.create({
    connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.HOSTFLOW_TASK_QUEUE,
    activities,
    interceptors: { activity: [activityLogFields] },
    // Most activities wait on the network (SSH, the allocator's answer), not the CPU: a slot
    // held by a TaskRun waiting for its allocator must not keep deliveries from starting.
    maxConcurrentActivityTaskExecutions: settings.HOSTFLOW_MAX_CONCURRENT_ACTIVITIES,
    maxCachedWorkflows: settings.HOSTFLOW_MAX_CACHED_WORKFLOWS,
    // Only the workflows of the families the install runs (workers/workflow-code.ts).
    ...workflowCode,
    ...workerDeploymentOptions(version),
  });
  // Workflows upsert search attributes and ask with update-with-start: refused here, at once,
  // rather than failing workflow tasks over and over later.
  await checkTemporalServer(
    clientConnection,
    settings.TEMPORAL_NAMESPACE,
    (m) => log.warn(`hostflow worker: ${m}`),
    { workerVersioning: version !== undefined },
  );
  await startGarbageCollection(client, settings);
  return {
    worker,
    client,
    version,
    setApiKey: async (key) => {
      clientConnection.setApiKey(key);
      await connection.setApiKey(key);
    },
    close: async () => {
      // pooled SSH connections would otherwise keep the process up until they idle out
      closeSshConnections();
      await Promise.all([connection.close(), clientConnection.close()]);
    },
  };
}

/**
 * Garbage collection runs at every worker start, then every interval (one workflow of each kind
 * per install): cloud VMs, where builds or Machines launch them, and TaskRun leftovers (build
 * users on static hosts, Secrets), where the install serves TaskRuns.
 */
async function startGarbageCollection(client: Client, settings: Settings): Promise<void> {
  const { HOSTFLOW_NAMESPACE: namespace, HOSTFLOW_TASK_QUEUE: taskQueue } = settings;
  const families = settings.HOSTFLOW_FAMILIES;
  const starts = [
    ...(runsAny(families, 'taskruns', 'machines')
      ? [cloudGcStart(namespace, { intervalSeconds: settings.HOSTFLOW_CLOUD_GC_INTERVAL_SECONDS })]
      : []),
    ...(runsAny(families, 'taskruns')
      ? [
          leftoversGcStart(namespace, {
            intervalSeconds: settings.HOSTFLOW_RESYNC_SECONDS,
            graceSeconds: settings.HOSTFLOW_TASKRUN_GC_GRACE_SECONDS,
          }),
        ]
      : []),
  ];
  for (const { workflowType, ...start } of starts) {
    // By name: importing the workflow module outside the workflow sandbox would run its proxies.
    await client.workflow.signalWithStart(workflowType, {
      ...start,
      taskQueue,
      signal: collectNow,
    });
  }
}

/**
 * Live while the worker runs or drains (a failed worker exits on its own); ready while it polls
 * and Temporal answers, so a rollout waits for new workers to reach the server.
 */
function workerHealth(worker: Worker, client: Client): HealthChecks {
  return {
    live: () => {
      const state = worker.getState();
      return ['FAILED', 'STOPPED'].includes(state) ? `worker is ${state}` : undefined;
    },
    ready: async () => {
      const state = worker.getState();
      if (state !== 'RUNNING') return `worker is ${state}`;
      await client.workflowService.getSystemInfo({});
      return undefined;
    },
  };
}

function otpDelivery(settings: Settings): OtpDelivery | undefined {
  const {
    HOSTFLOW_OTP_URL: url,
    HOSTFLOW_OTP_CA_FILE: caFile,
    HOSTFLOW_OTP_STORE_TOKEN_FILE: tokenFile,
  } = settings;
  if (!url && !caFile && !tokenFile) return undefined; // local platforms only
  if (!url || !caFile || !tokenFile) {
    throw new Error(
      'invalid hostflow settings: HOSTFLOW_OTP_URL, HOSTFLOW_OTP_CA_FILE and HOSTFLOW_OTP_STORE_TOKEN_FILE go together',
    );
  }
  const client = OtpClient.fromFiles({ url, caFile, storeTokenFile: tokenFile });
  const publicRedeem = settings.HOSTFLOW_OTP_PUBLIC_URL
    ? `${settings.HOSTFLOW_OTP_PUBLIC_URL.replace(/\/+$/, '')}/otp`
    : client.redeemUrl;
  return { client, publicRedeemUrl: publicRedeem };
}

async function main(log: Logger): Promise<void> {
  const settings = loadSettings();
  // The SDK's logs, workflows' and activities' `log`, and Temporal core's warnings, as JSON lines.
  Runtime.install({
    logger: temporalLogger(log),
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(settings.HOSTFLOW_METRICS_ADDRESS
        ? {
            metrics: {
              prometheus: {
                bindAddress: settings.HOSTFLOW_METRICS_ADDRESS,
                histogramBucketOverrides: HISTOGRAM_BUCKETS_SECONDS,
              },
            },
          }
        : {}),
    },
  });
  const { worker, client, version, setApiKey, close } = await createWorker(settings, log);
  const credentials = watchTemporalCredentials(settings, {
    apiKey: async (key) => {
      await setApiKey(key);
      log.info('hostflow worker: Temporal API key reloaded');
    },
    restart: (reason) => {
      // The worker drains on SIGTERM: in-flight tasks finish, and it is started again.
      log.info(`hostflow worker: ${reason}: draining, to be started again with them`);
      process.kill(process.pid, 'SIGTERM');
    },
    warn: (m) => log.warn(`hostflow worker: ${m}`),
  });
  const health = settings.HOSTFLOW_HEALTH_ADDRESS
    ? await serveHealth(workerHealth(worker, client), settings.HOSTFLOW_HEALTH_ADDRESS)
    : undefined;
  log.info(
    `hostflow worker polling ${settings.TEMPORAL_ADDRESS} namespace ${settings.TEMPORAL_NAMESPACE} task queue ${settings.HOSTFLOW_TASK_QUEUE}` +
      (version ? ` as build ${version.buildId} of ${version.deploymentName}` : ''),
  );
  let running = true;
  const following = version
    ? followDeployment(client, version, settings.HOSTFLOW_TASK_QUEUE, log, {
        stopped: () => !running,
      })
    : undefined;
  await worker.run(); // returns after SIGINT/SIGTERM once in-flight tasks are done
  running = false;
  await following;
  credentials.stop();
  health?.close();
  await close();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const log = createLogger('worker');
  main(log).catch((err) => {
    log.error(`hostflow worker: ${(err as Error).message}`);
    process.exit(1);
  });
}
