// One TaskRun's life, as the seed tells it: find out how its platform is served, hand the
// build its Secret (or an error it can act on), wait for the build to finish, clean up.
import {
  CancellationScope,
  condition,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { KubernetesActivities, TaskRunRef } from '../activities/kubernetes.js';
import { LABELS, LOCALHOST, platformLabel } from '../platform-config/contract.js';
import { checkPlatform } from '../platform-config/platform.js';
import {
  TASKRUN_STATE_ORDER,
  taskRunObserved,
  taskRunStatus,
  type Phase,
  type TaskRunState,
  type TaskRunStatus,
} from './messages.js';
import { SA } from './search-attributes.js';

export interface TaskRunWorkflowInput extends TaskRunRef {
  platform: string;
}

export type TaskRunOutcome =
  | { served: 'local' }
  | { served: 'error'; message: string }
  | { served: 'nothing'; reason: string };

// Kubernetes calls are short, so they run as local activities: in the worker, within the
// workflow task, without a round trip through the server per call. Retries are unlimited
// (the API server may be down for a while); past localRetryThreshold they wait on timers.
const kube = proxyLocalActivities<KubernetesActivities>({
  startToCloseTimeout: '30 seconds',
  localRetryThreshold: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
  },
});

export async function taskRunWorkflow(input: TaskRunWorkflowInput): Promise<TaskRunOutcome> {
  const status: TaskRunStatus = { phase: 'Allocating', observed: 'active' };
  setHandler(taskRunObserved, ({ state }) => {
    if (TASKRUN_STATE_ORDER.indexOf(state) > TASKRUN_STATE_ORDER.indexOf(status.observed)) {
      status.observed = state;
    }
  });
  setHandler(taskRunStatus, () => status);
  const ended = (): boolean => status.observed !== 'active';
  const ref: TaskRunRef = { namespace: input.namespace, name: input.name, uid: input.uid };
  const label = `TaskRun ${input.namespace}/${input.name}`;

  let outcome: TaskRunOutcome = {
    served: 'nothing',
    reason: 'the TaskRun ended before it was served',
  };
  try {
    if (!ended()) outcome = await serve(input, ref, status);
    setCurrentDetails(
      `${label} is ${status.phase === 'Ready' ? 'served' : 'failed'}; ` +
        'waiting for it to complete or be deleted, then cleaning up.',
    );
    await condition(ended);
  } finally {
    // Clean-up must happen even when the workflow itself is cancelled.
    await CancellationScope.nonCancellable(async () => {
      status.phase = 'CleaningUp';
      setCurrentDetails(`${label} ${describe(status.observed)}; deleting its Secret.`);
      await kube.deleteTaskRunSecret(ref);
      publish(status, 'Done');
      setCurrentDetails(`${label} ${describe(status.observed)}; cleaned up.`);
    });
  }
  return outcome;
}

async function serve(
  input: TaskRunWorkflowInput,
  ref: TaskRunRef,
  status: TaskRunStatus,
): Promise<TaskRunOutcome> {
  setCurrentDetails(
    `Resolving platform ${input.platform} for TaskRun ${input.namespace}/${input.name}.`,
  );
  const resolution = await kube.resolveTaskRunPlatform({
    namespace: input.namespace,
    platform: input.platform,
  });
  const labels: Record<string, string> = {};
  if (checkPlatform(input.platform).ok)
    labels[LABELS.targetPlatform] = platformLabel(input.platform);

  if (resolution.kind === 'error') {
    status.error = resolution.message;
    await Promise.all([
      kube.writeTaskRunSecret({ ...ref, data: { error: resolution.message } }),
      kube.patchTaskRunMetadata({ ...ref, labels }),
    ]);
    publish(status, 'Failed');
    return { served: 'error', message: resolution.message };
  }

  await Promise.all([
    kube.writeTaskRunSecret({ ...ref, data: { host: LOCALHOST } }),
    kube.patchTaskRunMetadata({ ...ref, labels: { ...labels, [LABELS.assignedHost]: LOCALHOST } }),
  ]);
  status.host = LOCALHOST;
  publish(status, 'Ready');
  return { served: 'local' };
}

/** Records a phase where operators search for it: one search-attribute upsert per phase. */
function publish(status: TaskRunStatus, phase: Phase): void {
  status.phase = phase;
  upsertSearchAttributes([
    { key: SA.phase, value: phase },
    ...(status.host ? [{ key: SA.host, value: status.host }] : []),
  ]);
}

function describe(state: TaskRunState): string {
  return state === 'deleted' ? 'was deleted' : state === 'completed' ? 'completed' : 'is running';
}
