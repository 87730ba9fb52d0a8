// A TaskRun served from one of its platform's hosts (static hosts, or a dynamic pool's VMs, which
// the allocator runs): take a slot, create the build user there, and when the host fails try
// another, as the multi-platform-controller's "Host Pool" section tells it. Hosts are blamed only
// for their own failures (deliver.ts); clean-up (clean-up.ts) removes the user and frees the slot.
import { setCurrentDetails } from '@temporalio/workflow';
import { ANNOTATIONS, LABELS } from '../../platform-config/contract.js';
import type { Host } from '../../platform-config/host.js';
import type { TaskRunOutcome } from '../../shared/contracts/taskrun.js';
import { metrics } from '../metrics.js';
import { answerWithError } from './answer.js';
import { continueTaskRun } from './continue.js';
import { deliverTo } from './deliver.js';
import { answerForbidden } from './forbidden.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import { takeSlot } from './slot.js';
import { tellAllocator } from '../kit/allocator-slot.js';
import type { TaskRun } from './types.js';

const MAX_POOL_VMS_TRIED = 3;

/** `resumedOn`: an earlier run of this workflow was delivering to this granted host. */
export async function serveFromHostSlots(
  run: TaskRun,
  labels: Record<string, string>,
  resumedOn?: Host,
): Promise<TaskRunOutcome> {
  const { input, status, pool } = run;
  const waitingSince = Date.now();
  if (!resumedOn) {
    await patch(run, {
      labels,
      annotations: { [ANNOTATIONS.allocationStartTime]: String(Math.floor(waitingSince / 1000)) },
    });
  }

  pool.skipped ??= [];
  let granted = resumedOn;
  for (;;) {
    // A pool always has another VM to offer: a build that failed on enough of them gets an answer.
    const failedVms = status.failedHosts.length;
    if (run.cloud?.pool && failedVms >= MAX_POOL_VMS_TRIED) {
      return exhausted(run, labels, `it failed on ${failedVms} VMs of the pool`);
    }
    const resumed = granted !== undefined; // its allocation was noted by the earlier run
    if (!granted) {
      pool.attempt++;
      const answer = await takeSlot(run, {
        summary: `Ask allocator/${input.platform} for a host (attempt ${pool.attempt})`,
        waitingFor: `a ${input.platform} host`,
        eventKey: `${pool.attempt}`,
        labels: {},
        excluded: [...status.failedHosts, ...pool.skipped],
      });
      if ('ended' in answer) {
        return { served: 'nothing', reason: 'the TaskRun ended while waiting for a host' };
      }
      if ('exhausted' in answer) return exhausted(run, labels, answer.exhausted);
      granted = answer.granted;
      metrics.allocationWait.record((Date.now() - waitingSince) / 1000, {
        platform: input.platform,
      });
    }
    const host = granted;
    granted = undefined;
    status.host = host.name;
    run.publish('Provisioning');
    setCurrentDetails(
      `Creating a build user on ${host.name} (${host.address}) for TaskRun ${input.namespace}/${input.name}.`,
    );
    // Noted alongside the delivery, not before it: a workflow task fewer per TaskRun.
    const noteAllocation = () =>
      Promise.all([
        patch(run, {
          labels: { [LABELS.waitingForPlatform]: null, [LABELS.assignedHost]: host.name },
        }),
        event(run, 'Normal', 'HostAllocated', `Allocated host ${host.name} (${host.address})`),
      ]);
    if (!pool.touched.some((h) => h.name === host.name)) pool.touched.push(host);

    const result = await deliverTo(run, host, {
      summary: `Create a build user on ${host.name} (${host.address}) and deliver its Secret`,
      alongside: resumed ? undefined : noteAllocation,
      continueAsNew: () => continueTaskRun(run, { stage: 'delivering', host, labels }),
    });
    if ('delivered' in result) {
      await tellAllocator(input.platform, { hostOutcome: { host: host.name, ok: true } });
      pool.serving = host;
      status.user = result.delivered.user;
      run.publish('Ready');
      return { served: 'static', host: host.name, user: result.delivered.user };
    }
    if ('ended' in result) {
      return { served: 'nothing', reason: 'the TaskRun ended while its build user was delivered' };
    }
    if ('forbidden' in result) return answerForbidden(run, labels, result.forbidden);
    if ('final' in result) {
      return answerWithError(
        run,
        `the build user on ${input.platform} host ${host.name} could not be delivered: ` +
          `${result.final}. Retry the build; if it keeps failing, ask the platform operators.`,
        { ...labels, [LABELS.waitingForPlatform]: null },
      );
    }
    // This host cannot serve the TaskRun: give its slot back and ask for another host.
    const hostFailed = 'hostFailed' in result;
    pool.lastError = hostFailed ? result.hostFailed : result.hostUnusable;
    status.host = undefined;
    if (hostFailed) {
      status.failedHosts.push(host.name);
      metrics.provisioningFailures.add(1, { platform: input.platform, host: host.name });
    } else {
      pool.skipped.push(host.name);
    }
    await Promise.all([
      hostFailed
        ? tellAllocator(input.platform, { hostOutcome: { host: host.name, ok: false } })
        : undefined,
      tellAllocator(input.platform, { releaseSlot: { requestId: pool.requestId! } }),
      patch(run, {
        labels: { [LABELS.assignedHost]: null },
        ...(hostFailed
          ? { annotations: { [ANNOTATIONS.failedHosts]: status.failedHosts.join(',') } }
          : {}),
      }),
      hostFailed
        ? event(
            run,
            'Warning',
            'ProvisioningFailed',
            `Provisioning on host ${host.name} failed: ${pool.lastError}`,
          )
        : event(
            run,
            'Warning',
            'HostSkipped',
            `Host ${host.name} cannot serve until its host-config entry is fixed: ${pool.lastError}`,
          ),
    ]);
    pool.requestId = undefined;
  }
}

function exhausted(run: TaskRun, labels: Record<string, string>, reason: string) {
  const { input, status, pool } = run;
  const tried = status.failedHosts.length ? ` Tried: ${status.failedHosts.join(', ')}.` : '';
  const skipped = pool.skipped?.length
    ? ` Skipped (host-config entry cannot serve): ${pool.skipped.join(', ')}.`
    : '';
  const last = pool.lastError ? ` Last error: ${pool.lastError}` : '';
  return answerWithError(
    run,
    `no ${input.platform} host could be provisioned for this TaskRun: ${reason}.${tried}${skipped}${last} ` +
      'Retry the build; if it keeps failing, ask the platform operators to check the hosts.',
    { ...labels, [LABELS.waitingForPlatform]: null },
  );
}

function patch(
  run: TaskRun,
  metadata: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> },
): Promise<unknown> {
  return taskRunKube(run).patchMetadata(metadata);
}

function event(
  run: TaskRun,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  return note(run, type, reason, message, `${run.pool.attempt}`);
}
