// `hostflow retry taskrun NAMESPACE/NAME`: on-call has a Failed TaskRun that still runs served
// again once the cause is fixed (a host's admin key, say). Its workflow takes the `retryTaskRun`
// update, which refuses anything but a Failed, running TaskRun with the reason; the workflow
// records the retry as an Event on the TaskRun (`RetryRequested`), so it is in the resource's
// history as an annotation would be, while on-call hears a refusal at once.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  isCompleted,
  matchContract,
  type TaskRunObject,
} from '../platform-config/taskrun-contract.js';
import { secretNameFor } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { statusCode } from '../shared/kube-errors.js';
import { retryTaskRun, type TaskRunRetryOutcome } from '../shared/contracts/taskrun.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { loadKubeConfig } from '../runtime/settings.js';
import { updateRefusal, withTemporal } from './oncall.js';

export interface TaskRunTarget {
  namespace: string;
  name: string;
  kubeconfig?: string;
  context?: string;
}

export async function runRetryTaskRun(target: TaskRunTarget): Promise<number> {
  const { namespace, name } = target;
  const label = `TaskRun ${namespace}/${name}`;
  const refuse = (why: string) => {
    console.error(`hostflow retry: ${why}`);
    return 1;
  };
  const kc = loadKubeConfig(target.kubeconfig, target.context, {
    context: '--context',
    file: '--kubeconfig or KUBECONFIG',
  });
  let taskRun: TaskRunObject;
  try {
    taskRun = (await kc
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...TASKRUN_API, namespace, name })) as TaskRunObject;
  } catch (err) {
    const code = statusCode(err);
    return refuse(
      code === 404
        ? `there is no ${label}`
        : code === 403
          ? `you may not read taskruns in ${namespace} (${(err as Error).message})`
          : (err as Error).message,
    );
  }
  if (isCompleted(taskRun)) {
    return refuse(`${label} has already completed: nothing runs that could use a host`);
  }
  const served = matchContract(taskRun);
  if (!served) {
    return refuse(
      `hostflow does not serve ${label}: it needs a PLATFORM param and a volume of Secret ${secretNameFor(name)}`,
    );
  }
  const workflowId = WORKFLOW_ID.taskRun(namespace, name, served.uid);
  let outcome: TaskRunRetryOutcome;
  try {
    outcome = await withTemporal('hostflow retry', ({ client }) =>
      client.workflow.getHandle(workflowId).executeUpdate(retryTaskRun),
    );
  } catch (err) {
    return refuse(
      err instanceof WorkflowNotFoundError
        ? `no workflow serves ${label} now (${workflowId}): it has finished, or the bridge has not started it yet`
        : (updateRefusal(err) ?? (err as Error).message),
    );
  }
  console.log(
    `hostflow retry: ${label} is being served again (retry ${outcome.retry}); it had been ` +
      `answered: ${outcome.previousError}\nWatch its Secret: kubectl -n ${namespace} get secret ` +
      `${secretNameFor(name)} -w, and its Events: kubectl -n ${namespace} describe taskrun ${name}`,
  );
  return 0;
}
