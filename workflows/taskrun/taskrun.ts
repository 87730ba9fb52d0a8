// One TaskRun's life, as the seed tells it: find out how its platform is served, hand the
// build its Secret (or an error it can act on), wait for the build to finish, clean up.
import {
  CancellationScope,
  condition,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { LABELS, LOCALHOST, platformLabel } from '../../platform-config/contract.js';
import { checkPlatform } from '../../platform-config/platform.js';
import { kube } from '../activities.js';
import { slotExhausted, slotGranted } from '../../shared/messages.js';
import {
  TASKRUN_STATE_ORDER,
  taskRunObserved,
  taskRunStatus,
  type Phase,
  type TaskRunState,
  type TaskRunStatus,
} from '../../shared/messages.js';
import { SA } from '../../shared/search-attributes.js';
import { serveFromCloud, terminateVms } from './cloud-vm.js';
import { cleanUpStaticPool, newPoolRun, serveFromStaticPool } from './host-slot.js';
import type { TaskRunOutcome, TaskRunWorkflowInput } from '../../shared/types.js';
import type { TaskRun } from './types.js';

export async function taskRunWorkflow(input: TaskRunWorkflowInput): Promise<TaskRunOutcome> {
  const status: TaskRunStatus = { phase: 'Allocating', observed: 'active', failedHosts: [] };
  const run: TaskRun = {
    input,
    ref: { namespace: input.namespace, name: input.name, uid: input.uid },
    status,
    ended: () => status.observed !== 'active',
    publish: (phase) => publish(status, phase),
    pool: newPoolRun(),
  };
  setHandler(taskRunObserved, ({ state }) => {
    if (TASKRUN_STATE_ORDER.indexOf(state) > TASKRUN_STATE_ORDER.indexOf(status.observed)) {
      status.observed = state;
    }
  });
  setHandler(taskRunStatus, () => status);
  setHandler(slotGranted, ({ requestId, host }) => {
    if (requestId === run.pool.requestId) run.pool.grant = host;
  });
  setHandler(slotExhausted, ({ requestId, reason }) => {
    if (requestId === run.pool.requestId) run.pool.exhausted = reason;
  });
  const label = `TaskRun ${input.namespace}/${input.name}`;

  let outcome: TaskRunOutcome = {
    served: 'nothing',
    reason: 'the TaskRun ended before it was served',
  };
  try {
    if (!run.ended()) outcome = await serve(run);
    setCurrentDetails(
      `${label} is ${status.phase === 'Ready' ? `served by ${status.host}` : 'failed'}; ` +
        'waiting for it to complete or be deleted, then cleaning up.',
    );
    await condition(run.ended);
  } finally {
    // Clean-up must happen even when the workflow itself is cancelled.
    await CancellationScope.nonCancellable(async () => {
      status.phase = 'CleaningUp';
      setCurrentDetails(`${label} ${describe(status.observed)}; cleaning up.`);
      await terminateVms(run, run.cloud);
      await cleanUpStaticPool(run, async () => {
        await kube.deleteTaskRunSecret(run.ref);
      });
      publish(status, 'Done');
      setCurrentDetails(`${label} ${describe(status.observed)}; cleaned up.`);
    });
  }
  return outcome;
}

async function serve(run: TaskRun): Promise<TaskRunOutcome> {
  const { input, ref, status } = run;
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

  switch (resolution.kind) {
    case 'error':
      return fail(run, resolution.message, labels);
    case 'static':
      return serveFromStaticPool(run, labels, fail);
    case 'pool':
      // The allocator runs the pool's VMs; to the TaskRun they are hosts like static ones.
      run.cloud = resolution.cloud;
      return serveFromStaticPool(run, labels, fail);
    case 'dynamic':
      run.cloud = resolution.cloud;
      return serveFromCloud(run, resolution.cloud, resolution.additionalTags, labels, fail);
    case 'local':
      await Promise.all([
        kube.writeTaskRunSecret({ ...ref, data: { host: LOCALHOST } }),
        kube.patchTaskRunMetadata({
          ...ref,
          labels: { ...labels, [LABELS.assignedHost]: LOCALHOST },
        }),
      ]);
      status.host = LOCALHOST;
      publish(status, 'Ready');
      return { served: 'local' };
  }
}

/** The build still gets its Secret, with an `error` it can print, so its pod never hangs. */
async function fail(
  run: TaskRun,
  message: string,
  labels: Record<string, string | null>,
): Promise<TaskRunOutcome> {
  run.status.error = message;
  await Promise.all([
    kube.writeTaskRunSecret({ ...run.ref, data: { error: message } }),
    kube.patchTaskRunMetadata({ ...run.ref, labels }),
  ]);
  publish(run.status, 'Failed');
  return { served: 'error', message };
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
