// The worker process: runs workflows and activities until SIGINT/SIGTERM, then drains.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { createActivities } from '../activities/index.js';
import { kubeConfig, loadSettings, temporalConnection, type Settings } from './settings.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.js', import.meta.url));

export async function createWorker(settings: Settings): Promise<Worker> {
  const kc = kubeConfig(settings);
  const activities = createActivities({
    kube: {
      core: kc.makeApiClient(CoreV1Api),
      custom: kc.makeApiClient(CustomObjectsApi),
      engineNamespace: settings.HOSTFLOW_NAMESPACE,
    },
  });
  const connection = await NativeConnection.connect(temporalConnection(settings));
  return Worker.create({
    connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.HOSTFLOW_TASK_QUEUE,
    activities,
    ...(settings.HOSTFLOW_WORKFLOW_BUNDLE
      ? { workflowBundle: { codePath: settings.HOSTFLOW_WORKFLOW_BUNDLE } }
      : { workflowsPath: WORKFLOWS_PATH }),
  });
}

async function main(): Promise<void> {
  const settings = loadSettings();
  if (settings.HOSTFLOW_METRICS_ADDRESS) {
    Runtime.install({
      telemetryOptions: {
        metrics: { prometheus: { bindAddress: settings.HOSTFLOW_METRICS_ADDRESS } },
      },
    });
  }
  const worker = await createWorker(settings);
  console.log(
    `hostflow worker polling ${settings.TEMPORAL_ADDRESS} namespace ${settings.TEMPORAL_NAMESPACE} task queue ${settings.HOSTFLOW_TASK_QUEUE}`,
  );
  await worker.run(); // returns after SIGINT/SIGTERM once in-flight tasks are done
  await worker.connection?.close();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(`hostflow worker: ${(err as Error).message}`);
    process.exit(1);
  });
}
