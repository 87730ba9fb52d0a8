// One TaskRun's life, as the multi-platform-controller tells it: check what the TaskRun asks for,
// find out how its platform is served, hand the build its Secret (or an error it can act on), wait
// for the build to finish, clean up. Every path answers the build: served, or an `error` Secret.
import {
  CancellationScope,
  ContinueAsNew,
  condition,
  isCancellation,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { LABELS, LOCALHOST, platformLabel } from '../../platform-config/contract.js';
import { checkPlatform } from '../../platform-config/platform.js';
import { checkTaskRunInput } from '../../platform-config/taskrun-input.js';
import { askForSlotAgain, slotExhausted, slotGranted } from '../../shared/contracts/allocator.js';
import {
  TASKRUN_STATE_ORDER,
  taskRunObserved,
  taskRunStatus,
  type Phase,
  type TaskRunState,
  type TaskRunStatus,
  type TaskRunOutcome,
  type TaskRunWorkflowInput,
} from '../../shared/contracts/taskrun.js';
import { SA } from '../../shared/search-attributes.js';
import { adoptEarlierRun } from './adopt.js';
import { answerUnexpected, answerWithError, warnUnanswerable } from './answer.js';
import { cleanUpTaskRun } from './clean-up.js';
import { continueTaskRun, historyFull, takeOver, type Stage } from './continue.js';
import { serveFromOwnVm } from './cloud-vm.js';
import { serveFromHostSlots } from './host-slot.js';
import { noteMetadataNotWritten, taskRunKube } from './kubernetes.js';
import { forgetFailure, handleRetries, retryPending } from './retry-failed.js';
import { isNoLongerWanted } from '../kit/retry.js';
import type { TaskRun } from './types.js';

export async function taskRunWorkflow(input: TaskRunWorkflowInput): Promise<TaskRunOutcome> {
  const status: TaskRunStatus = { phase: 'Allocating', observed: 'active', failedHosts: [] };
  const run: TaskRun = {
    input,
    ref: { namespace: input.namespace, name: input.name, uid: input.uid },
    status,
    ended: () => status.observed !== 'active',
    publish: (phase) => publish(status, phase),
    pool: { attempt: 0, touched: [] },
  };
  const resumed = takeOver(run);
  setHandler(taskRunObserved, ({ state, originalFinalizer }) => {
    if (TASKRUN_STATE_ORDER.indexOf(state) > TASKRUN_STATE_ORDER.indexOf(status.observed)) {
      status.observed = state;
    }
    if (originalFinalizer) status.originalFinalizer = true;
  });
  setHandler(taskRunStatus, () => status);
  setHandler(slotGranted, ({ requestId, host }) => {
    if (requestId === run.pool.requestId) run.pool.grant = host;
  });
  setHandler(slotExhausted, ({ requestId, reason }) => {
    if (requestId === run.pool.requestId) run.pool.exhausted = reason;
  });
  setHandler(askForSlotAgain, () => {
    run.pool.askAgain = true;
  });
  handleRetries(run);
  const label = `TaskRun ${input.namespace}/${input.name}`;

  let outcome: TaskRunOutcome = {
    served: 'nothing',
    reason: 'the TaskRun ended before it was served',
  };
  try {
    if (resumed?.stage === 'answered') outcome = resumed.outcome;
    else if (!run.ended()) outcome = await serveAnswering(run, resumed);
    if (run.unanswerable) return outcome; // nothing was allocated, and no Secret can exist
    for (;;) {
      setCurrentDetails(
        `${label} is ${status.phase === 'Ready' ? `served by ${status.host}` : 'failed'}; ` +
          'waiting for it to complete or be deleted, then cleaning up.',
      );
      run.answered = true;
      await condition(() => run.ended() || retryPending(run) || historyFull(run));
      run.answered = false;
      if (run.ended()) break;
      if (!retryPending(run)) await continueTaskRun(run, { stage: 'answered', outcome });
      // Failed, and on-call fixed the cause and asked for a retry (retry-failed.ts).
      await forgetFailure(run);
      outcome = await serveAnswering(run);
    }
  } finally {
    // Clean-up must happen even when the workflow itself is cancelled; a run that continued as
    // new leaves it to the next.
    if (!run.unanswerable && !run.continuing)
      await CancellationScope.nonCancellable(async () => {
        status.phase = 'CleaningUp';
        setCurrentDetails(`${label} ${describe(status.observed)}; cleaning up.`);
        await cleanUpTaskRun(run);
        publish(status, 'Done');
        setCurrentDetails(`${label} ${describe(status.observed)}; cleaned up.`);
      });
  }
  return outcome;
}

/** Serves the TaskRun; a failure nothing else handled still answers the build. */
async function serveAnswering(run: TaskRun, resumed?: Stage): Promise<TaskRunOutcome> {
  try {
    return await serve(run, resumed);
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err)) throw err;
    // A wait the TaskRun's end stopped: nobody is left to answer.
    if (isNoLongerWanted(err) && run.ended()) {
      return { served: 'nothing', reason: 'the TaskRun ended before it was served' };
    }
    return answerUnexpected(run, err);
  }
}

async function serve(run: TaskRun, resumed?: Stage): Promise<TaskRunOutcome> {
  const { input, status } = run;
  // An earlier run was delivering to a granted host: this one carries on from there.
  if (resumed?.stage === 'delivering') return serveFromHostSlots(run, resumed.labels, resumed.host);
  const check = checkTaskRunInput(input);
  if (!check.ok) {
    if (check.answerable) return answerWithError(run, check.reason, {});
    run.unanswerable = true;
    return warnUnanswerable(run, check.reason);
  }
  setCurrentDetails(
    `Resolving platform ${input.platform} for TaskRun ${input.namespace}/${input.name}.`,
  );
  const k8s = taskRunKube(run);
  const labels: Record<string, string> = {};
  if (checkPlatform(input.platform).ok)
    labels[LABELS.targetPlatform] = platformLabel(input.platform);
  const resolution = await k8s.resolvePlatform({ labels });

  if (resolution.kind !== 'error' && resolution.kind !== 'local' && resolution.earlier) {
    const cloud = resolution.kind === 'static' ? undefined : resolution.cloud;
    const adopted = await adoptEarlierRun(run, resolution.earlier, cloud);
    if (adopted) {
      run.cloud = cloud;
      return adopted;
    }
  }
  switch (resolution.kind) {
    case 'error':
      return answerWithError(run, resolution.message, labels);
    case 'static':
      return serveFromHostSlots(run, labels);
    case 'pool':
      // The allocator runs the pool's VMs; to the TaskRun they are hosts like static ones.
      run.cloud = resolution.cloud;
      return serveFromHostSlots(run, labels);
    case 'dynamic':
      run.cloud = resolution.cloud;
      return serveFromOwnVm(run, resolution.cloud, resolution.additionalTags, labels);
    case 'local':
      // Answered (Secret, labels) by the call that resolved the platform.
      if (resolution.answered?.labelsNotWritten !== undefined) {
        await noteMetadataNotWritten(run, resolution.answered.labelsNotWritten);
      }
      status.host = LOCALHOST;
      publish(status, 'Ready');
      return { served: 'local' };
  }
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
