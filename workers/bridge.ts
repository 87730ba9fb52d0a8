// The bridge process: watches the resources of the families the install runs (HOSTFLOW_FAMILIES:
// TaskRuns and host-config, the BPA resources, ClusterOperations, Machines, MachineConfigPools),
// and signals their workflows (k8s-bridge/ingest.ts), until SIGINT/SIGTERM.
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { fileURLToPath } from 'node:url';
import { HostConfigWatch } from '../k8s-bridge/host-config-watch.js';
import { clusterOperationIngest } from '../k8s-bridge/cluster-operation-ingest.js';
import { BpaIngest } from '../k8s-bridge/bpa-ingest.js';
import { machineIngest } from '../k8s-bridge/machine-ingest.js';
import { RolloutIngest } from '../k8s-bridge/rollout-ingest.js';
import { TaskRunIngest } from '../k8s-bridge/taskrun-ingest.js';
import { unsyncedListWatches } from '../k8s-bridge/list-watch.js';
import { runsAny, type Family } from '../shared/families.js';
import { serveHealth } from '../runtime/health-server.js';
import { claimNamespaceForEngine } from '../runtime/namespace-claim.js';
import { watchTemporalCredentials } from '../runtime/temporal-credentials.js';
import { checkTemporalServer } from '../runtime/temporal-requirements.js';
import { createLogger, lineLog, type Logger } from '../runtime/logger.js';
import { createRegistry, serveMetrics } from '../runtime/metrics-server.js';
import { kubeConfig, loadSettings, temporalConnection } from '../runtime/settings.js';

async function main(logger: Logger): Promise<void> {
  const settings = loadSettings();
  const log = lineLog(logger);
  const kc = kubeConfig(settings);
  const connection = await Connection.connect(temporalConnection(settings));
  const temporal = new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE });
  // It starts workflows with their search attributes, and TaskRuns with update-with-start.
  await checkTemporalServer(connection, settings.TEMPORAL_NAMESPACE, (m) =>
    log(`hostflow bridge: ${m}`, 'warn'),
  );
  const core = kc.makeApiClient(CoreV1Api);
  // Its namespace serves this cluster alone: refused at once when another cluster's engine has it.
  await claimNamespaceForEngine(temporal, { kc, core }, settings);
  const registry = createRegistry('bridge');
  const metricsServer = settings.HOSTFLOW_METRICS_ADDRESS
    ? await serveMetrics(registry, settings.HOSTFLOW_METRICS_ADDRESS)
    : undefined;
  // What every watch and ingest is given: where to watch, how often to resync, where to start.
  const common = {
    kubeConfig: kc,
    custom: kc.makeApiClient(CustomObjectsApi),
    temporal,
    taskQueue: settings.HOSTFLOW_TASK_QUEUE,
    resyncMs: settings.HOSTFLOW_RESYNC_SECONDS * 1000,
    log,
  };
  const watchNamespace = settings.HOSTFLOW_WATCH_NAMESPACE || undefined;
  const engineNamespace = settings.HOSTFLOW_NAMESPACE;
  const families = settings.HOSTFLOW_FAMILIES;
  const runs = (...some: Family[]) => runsAny(families, ...some);
  // Each through the one ingest (k8s-bridge/ingest.ts), for the families the install runs. Locks
  // have none: the API server enforces them, and the lock-audit process counts denials.
  const ingests: Array<{ start(): void; stop(): Promise<void> }> = [
    // host-config names the platforms of builds and of static Machines alike.
    ...(runs('taskruns', 'machines')
      ? [new HostConfigWatch({ ...common, core, engineNamespace })]
      : []),
    ...(runs('taskruns')
      ? [
          new TaskRunIngest({
            ...common,
            watchNamespace,
            metrics: registry,
            taskRunMaxHistory: settings.HOSTFLOW_TASKRUN_MAX_HISTORY,
          }),
        ]
      : []),
    ...(runs('provisionings')
      ? [
          new BpaIngest({
            ...common,
            watchNamespace,
            provisioningMaxHistory: settings.HOSTFLOW_PROVISIONING_MAX_HISTORY,
          }),
        ]
      : []),
    ...(runs('machines') ? [machineIngest({ ...common, watchNamespace })] : []),
    ...(runs('cluster-operations')
      ? [clusterOperationIngest({ ...common, watchNamespace, metrics: registry })]
      : []),
  ];
  const rollouts = runs('rollouts')
    ? new RolloutIngest({ ...common, core, apps: kc.makeApiClient(AppsV1Api), engineNamespace })
    : undefined;
  if (rollouts) ingests.push(rollouts);
  ingests.forEach((ingest) => ingest.start());
  // Ready once every watch has listed everything and Temporal answers: a new replica behind a
  // rolling update then has its index before the old one goes. A watch whose resource the API
  // server does not serve says so, with where its CRD comes from (k8s-bridge/list-watch.ts).
  const health = settings.HOSTFLOW_HEALTH_ADDRESS
    ? await serveHealth(
        {
          live: () => undefined,
          ready: async () => {
            const unsynced = unsyncedListWatches();
            if (unsynced.length > 0) return `not yet listed: ${unsynced.join(', ')}`;
            await temporal.workflowService.getSystemInfo({});
            return undefined;
          },
          // Where the MCO runs, the rollout family serves no pool: said, though the bridge is ready.
          notes: () => (rollouts?.notServing ? [rollouts.notServing] : []),
        },
        settings.HOSTFLOW_HEALTH_ADDRESS,
      )
    : undefined;
  logger.info(
    `hostflow bridge watching for ${families.join(', ')} on ${kc.getCurrentCluster()?.server}`,
  );
  const credentials = watchTemporalCredentials(settings, {
    apiKey: async (key) => {
      connection.setApiKey(key);
      log('hostflow bridge: Temporal API key reloaded');
    },
    restart: (reason) => {
      log(`hostflow bridge: ${reason}: stopping, to be started again with them`);
      process.kill(process.pid, 'SIGTERM');
    },
    warn: (m) => log(`hostflow bridge: ${m}`, 'warn'),
  });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  credentials.stop();
  await Promise.all(ingests.map((ingest) => ingest.stop()));
  metricsServer?.close();
  health?.close();
  await connection.close();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const logger = createLogger('bridge');
  main(logger).catch((err) => {
    logger.error(`hostflow bridge: ${(err as Error).message}`);
    process.exit(1);
  });
}
