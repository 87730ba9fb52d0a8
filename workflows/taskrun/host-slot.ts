// A TaskRun served from one of its platform's hosts (static hosts, or a dynamic pool's VMs, which
// the allocator runs): take a slot, create the build user there, and when the host fails try
// another, as the multi-platform-controller's "Host Pool" section tells it. Hosts are blamed only
// for their own failures (deliver.ts); clean-up (clean-up.ts) removes the user and frees the slot.
import { getExternalWorkflowHandle, patched, setCurrentDetails } from '@temporalio/workflow';
import { ANNOTATIONS, LABELS } from '../../platform-config/contract.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import type { Host } from '../../platform-config/host.js';
import { hostOutcome, releaseSlot } from '../../shared/contracts/allocator.js';
import type { TaskRunOutcome } from '../../shared/contracts/taskrun.js';
import { metrics } from '../metrics.js';
import { answerWithError } from './answer.js';
import { continueTaskRun } from './continue.js';
import { deliverTo } from './deliver.js';
import { answerForbidden } from './forbidden.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import { chooseRequestIds, takeSlot } from './slot.js';
import { tellAllocator, tellsAllocatorFromWorker } from '../kit/allocator-slot.js';
import type { TaskRun } from './types.js';

/** See serveFromHostSlots. */
export const PATCH_FAST_STATIC_PATH = 'static-pool-notes-alongside-delivery';
/** v2: a signal to an allocator that is gone is no provisioning failure (see tellAllocatorBySignal). */
export const PATCH_ALLOCATOR_SIGNALS_BEST_EFFORT = 'static-pool-allocator-signals-best-effort';
/** v2: a build on a dynamic pool tries at most MAX_POOL_VMS_TRIED VMs, then gets its answer. */
export const PATCH_POOL_TRIES_BOUNDED = 'pool-taskrun-tries-bounded';
const MAX_POOL_VMS_TRIED = 3;

/** `resumedOn`: an earlier run of this workflow was delivering to this granted host. */
export async function serveFromHostSlots(
  run: TaskRun,
  labels: Record<string, string>,
  resumedOn?: Host,
): Promise<TaskRunOutcome> {
  const { input, status, pool } = run;
  const platformAllocator = getExternalWorkflowHandle(WORKFLOW_ID.allocator(input.platform));
  const waitingSince = Date.now();
  if (!resumedOn) {
    await patch(run, {
      labels,
      annotations: { [ANNOTATIONS.allocationStartTime]: String(Math.floor(waitingSince / 1000)) },
    });
  }

  // v2: the TaskRun's labels and Event are written while the build user is being provisioned
  // rather than before it, saving a workflow task per TaskRun.
  const v2 = patched(PATCH_FAST_STATIC_PATH);
  if (!resumedOn) chooseRequestIds(run);
  pool.skipped ??= [];
  let granted = resumedOn;
  for (;;) {
    // A pool always has another VM to offer: a build that failed on enough of them gets an answer.
    const failedVms = status.failedHosts.length;
    if (run.cloud?.pool && failedVms >= MAX_POOL_VMS_TRIED && patched(PATCH_POOL_TRIES_BOUNDED)) {
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
    const noteAllocation = () =>
      Promise.all([
        patch(run, {
          labels: { [LABELS.waitingForPlatform]: null, [LABELS.assignedHost]: host.name },
        }),
        event(run, 'Normal', 'HostAllocated', `Allocated host ${host.name} (${host.address})`),
      ]);
    if (!v2 && !resumed) await noteAllocation();
    if (!pool.touched.some((h) => h.name === host.name)) pool.touched.push(host);

    const result = await deliverTo(run, host, {
      summary: `Create a build user on ${host.name} (${host.address}) and deliver its Secret`,
      alongside: v2 && !resumed ? noteAllocation : undefined,
      continueAsNew: () => continueTaskRun(run, { stage: 'delivering', host, labels }),
    });
    if ('delivered' in result) {
      const outcome = { host: host.name, ok: true };
      if (tellsAllocatorFromWorker()) await tellAllocator(input.platform, { hostOutcome: outcome });
      else await tellAllocatorBySignal(() => platformAllocator.signal(hostOutcome, outcome));
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
    const fromWorker = tellsAllocatorFromWorker();
    const failed = { host: host.name, ok: false };
    const release = { requestId: pool.requestId! };
    await Promise.all([
      !hostFailed
        ? undefined
        : fromWorker
          ? tellAllocator(input.platform, { hostOutcome: failed })
          : tellAllocatorBySignal(() => platformAllocator.signal(hostOutcome, failed)),
      fromWorker
        ? tellAllocator(input.platform, { releaseSlot: release })
        : tellAllocatorBySignal(() => platformAllocator.signal(releaseSlot, release)),
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

/**
 * The allocator may be gone (terminated by hand, or lost): its slot state went with it, and a
 * new one rebuilds what it needs, so a failed signal changes nothing for this TaskRun. (Before
 * v2 it counted as a provisioning failure of a build user that had in fact been delivered.)
 */
async function tellAllocatorBySignal(send: () => Promise<void>): Promise<void> {
  try {
    await send();
  } catch (err) {
    if (!patched(PATCH_ALLOCATOR_SIGNALS_BEST_EFFORT)) throw err;
  }
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
