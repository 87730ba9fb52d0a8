// One ClusterOperation's run, kubean's ClusterOperation as a narrative: run the pre-hooks in
// order, then the action, then the post-hooks. A failed step stops what follows, except post-hooks
// marked `always`. A cancel (the operation deleted) or its deadline stops the running playbook, and
// the status says that the hosts are as it left them. A retry runs again from the step that failed.
// The operation's own workflow runs it when its turn comes (lifecycle.ts).
import { CancellationScope, condition, isCancellation, log, sleep } from '@temporalio/workflow';
import type { CustomAction } from '../../activities/ansible/custom-action.js';
import type { BuiltinPlaybook, OperationStep } from '../../shared/cluster-operation-api.js';
import type {
  ClusterOperationInput,
  ClusterOperationOutcome,
} from '../../shared/contracts/cluster-operation.js';
import { innermostMessage } from '../../shared/failures.js';
import { failureDetails } from '../kit/playbook-failure.js';
import { operationPlaybooks } from './activity-proxies.js';
import { prepareSteps } from './preparation.js';
import type { OperationReport } from './report.js';
import { stepHosts } from './step-hosts.js';

/** The status fields of a failure, cleared when a retry starts. */
const FAILURE_FIELDS = ['failedStep', 'failedHost', 'failedTask', 'log'];

/** How a step ended that stops the steps after it. */
type Stop = { failed: string; step: string; details: Record<string, string> } | { cancelled: true };

/**
 * Runs the steps of an operation whose spec passed its check, from the step a retry resumes at;
 * the scope they run in is cancelled once `cancelled` holds (its object deleted), as it is when
 * the workflow is.
 */
export async function runOperation(
  input: ClusterOperationInput,
  report: OperationReport,
  steps: OperationStep[],
  cancelled?: () => boolean,
): Promise<ClusterOperationOutcome> {
  const { spec, target } = input;
  const actions = await prepareSteps(input, steps);
  if ('refused' in actions) return report.refused(actions.refused);
  // A retry starts at the step that failed: those before it succeeded in an earlier run.
  const { resume } = input;
  const from = Math.max(0, resume ? steps.findIndex((s) => s.name === resume.from) : 0);
  for (const [index, step] of steps.entries()) {
    const earlier = index < from ? { message: 'in an earlier run' } : {};
    const phase = index < from ? 'Succeeded' : 'Pending';
    report.steps.push({ name: step.name, action: step.action, phase, ...earlier });
  }
  const startTime = now();
  // A retry's status starts afresh; the earlier run's failure stays in that run's history.
  const afresh = resume
    ? Object.fromEntries([...FAILURE_FIELDS, 'completionTime'].map((key) => [key, null]))
    : {};
  await report.publish('Running', steps[from]!.name, resume ? 'Retrying.' : 'Started.', {
    startTime,
    // What it was told while it waited means nothing once it runs.
    queuePosition: null,
    notBefore: null,
    ...(resume ? { retry: resume.retry } : {}),
    ...afresh,
  });
  await report.event(
    'Normal',
    resume ? 'Retrying' : 'Started',
    `${spec.action} on cluster ${target.cluster}` +
      (resume ? `, again from ${steps[from]!.name}` : ''),
  );

  let stop: Stop | undefined;
  let deadlinePassed = false;
  const deadline = spec.activeDeadlineSeconds;
  const running = new CancellationScope();
  if (cancelled) {
    // Waits outside the workflow's scope: a cancel of the workflow itself cancels the steps anyway.
    void CancellationScope.nonCancellable(() => condition(cancelled)).then(() => running.cancel());
  }
  if (deadline) {
    // The deadline cancels the steps' scope as a deletion would; the outcome then says which.
    void CancellationScope.nonCancellable(() => sleep(deadline * 1000)).then(() => {
      deadlinePassed = true;
      running.cancel();
    });
  }
  for (const [index, step] of steps.entries()) {
    if (index < from) continue;
    const result = report.steps[index]!;
    if (stop && !step.always) {
      result.phase = 'Skipped';
      continue;
    }
    result.phase = 'Running';
    result.startTime = now();
    await report.publish('Running', step.name, `Running ${step.name}: ${step.action}.`, {
      startTime,
    });
    try {
      const outcome = await running.run(() => runStep(input, step, actions.get(step.name)));
      Object.assign(result, { phase: 'Succeeded', completionTime: now(), log: outcome.log });
      // Each host's tasks, as ansible's recap counted them.
      Object.assign(result, stepHosts(outcome, spec.dryRun));
    } catch (err) {
      if (!isCancellation(err) && !running.consideredCancelled) {
        const details = failureDetails(err);
        const message = innermostMessage(err);
        Object.assign(result, { phase: 'Failed', completionTime: now(), message, ...details });
        // A failed post-hook marked `always` after a failure does not hide the first failure.
        stop ??= { failed: message, step: step.name, details };
        log.warn('cluster operation step failed', { step: step.name, error: message });
        continue;
      }
      // Deleted, or past its deadline: nothing more runs.
      Object.assign(result, { phase: 'Cancelled', completionTime: now() });
      for (const later of report.steps.slice(index + 1)) later.phase = 'Skipped';
      const why: Stop = deadlinePassed
        ? { failed: deadlineMessage(deadline!, step), step: step.name, details: {} }
        : { cancelled: true };
      return CancellationScope.nonCancellable(() =>
        end(report, input, step, why, startTime, deadlinePassed),
      );
    }
  }
  return CancellationScope.nonCancellable(() =>
    end(report, input, steps.at(-1)!, stop, startTime, deadlinePassed),
  );
}

function runStep(input: ClusterOperationInput, step: OperationStep, action?: CustomAction) {
  const { target } = input;
  const common = {
    namespace: input.namespace,
    cluster: target.cluster,
    inventory: target.inventory,
    groupVars: target.groupVars,
    sshUser: target.sshUser,
    sshKeySecret: target.sshKeySecret,
    owner: target.provisioning,
    extraVars: step.extraVars,
    ...(input.spec.dryRun ? { check: true } : {}),
    ...(target.hostKeys ? { hostKeys: target.hostKeys } : {}),
  };
  if (action) {
    return operationPlaybooks.runCustomAction.executeWithOptions(
      { summary: `${step.name}: ${action.type} ${step.action} on cluster ${target.cluster}` },
      [{ ...common, action }],
    );
  }
  return operationPlaybooks.runPlaybook.executeWithOptions(
    { summary: `${step.name}: kubespray ${step.action} on cluster ${target.cluster}` },
    [
      {
        ...common,
        playbook: step.action as BuiltinPlaybook,
        ...(step.nodes ? { limit: step.nodes } : {}),
        ...(target.kubesprayRelease ? { kubesprayRelease: target.kubesprayRelease } : {}),
      },
    ],
  );
}

/** The final status and Event; what the Provisioning's workflow is told. */
async function end(
  report: OperationReport,
  input: ClusterOperationInput,
  last: OperationStep,
  stop: Stop | undefined,
  startTime: string,
  deadlinePassed: boolean,
): Promise<ClusterOperationOutcome> {
  const { spec, target } = input;
  const completionTime = now();
  if (!stop) {
    const upgrade = spec.action === 'upgrade-cluster.yml' && !spec.dryRun;
    const version = upgrade ? spec.extraVars?.kube_version : undefined;
    const message = spec.dryRun
      ? `Dry run of ${spec.action} on cluster ${target.cluster}: nothing was changed; ` +
        `it would change ${describeChanges(report)}.`
      : `${spec.action} on cluster ${target.cluster} succeeded.`;
    await report.publish('Succeeded', last.name, message, { startTime, completionTime });
    await report.event('Normal', 'Succeeded', message);
    return {
      phase: 'Succeeded',
      message,
      ...(typeof version === 'string' ? { kubeVersion: version } : {}),
    };
  }
  if ('cancelled' in stop) {
    const message =
      `Cancelled during ${last.name}: its playbook was stopped, and the hosts of cluster ` +
      `${target.cluster} are as it left them.`;
    await report.publish('Cancelled', last.name, message, { startTime, completionTime });
    await report.event('Warning', 'Cancelled', message);
    return { phase: 'Cancelled', message, failedStep: last.name };
  }
  const message = `${stop.step} failed: ${stop.failed}`;
  await report.publish('Failed', stop.step, message, {
    startTime,
    completionTime,
    failedStep: stop.step,
    ...stop.details,
  });
  await report.event('Warning', deadlinePassed ? 'DeadlineExceeded' : 'Failed', message);
  return { phase: 'Failed', message, failedStep: stop.step };
}

/** What a dry run's steps would change: `tasks on action: master 1, worker 1`, or nothing. */
function describeChanges(report: OperationReport): string {
  const parts = report.steps.flatMap((step) => {
    const hosts = Object.entries(step.wouldChange ?? {}).filter(([, n]) => n > 0);
    return hosts.length
      ? [`${step.name}: ${hosts.map(([host, n]) => `${host} ${n}`).join(', ')}`]
      : [];
  });
  return parts.length ? `tasks on ${parts.join('; ')}` : 'nothing';
}

function deadlineMessage(seconds: number, step: OperationStep): string {
  return (
    `activeDeadlineSeconds (${seconds}) passed during ${step.name}: its playbook was stopped, ` +
    'and the hosts are as it left them'
  );
}

/** Workflow time (deterministic in a workflow), as Kubernetes writes times. */
const now = () => new Date().toISOString();
