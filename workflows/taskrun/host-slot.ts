// A static-pool TaskRun: ask the platform's allocator for a slot (waiting in line if need be),
// create a build user on the granted host, and on failure try another host, as the seed's
// "Host Pool" section tells it. Clean-up removes the user, then the Secret, then frees the slot.
import {
  condition,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import { ANNOTATIONS, LABELS, WORKFLOW_ID, platformLabel } from '../../platform-config/contract.js';
import { allocator, boundedCleanup, delivery, durableCleanup, kube } from '../activities.js';
import { hostOutcome, releaseSlot } from '../../shared/messages.js';
import { metrics } from '../metrics.js';
import { innermostMessage, note } from './notes.js';
import type { TaskRunOutcome } from '../../shared/types.js';
import type { Fail, PoolRun, TaskRun } from './types.js';

/** See serveFromStaticPool. */
export const PATCH_FAST_STATIC_PATH = 'static-pool-notes-alongside-delivery';
/** v2: a signal to an allocator that is gone is no provisioning failure (see tellAllocator). */
export const PATCH_ALLOCATOR_SIGNALS_BEST_EFFORT = 'static-pool-allocator-signals-best-effort';

export const newPoolRun = (): PoolRun => ({ attempt: 0, touched: [] });

export async function serveFromStaticPool(
  run: TaskRun,
  labels: Record<string, string>,
  fail: Fail,
): Promise<TaskRunOutcome> {
  const { input, ref, status, pool } = run;
  const platformAllocator = getExternalWorkflowHandle(WORKFLOW_ID.allocator(input.platform));
  const waitingSince = Date.now();
  await patch(run, {
    labels,
    annotations: { [ANNOTATIONS.allocationStartTime]: String(Math.floor(waitingSince / 1000)) },
  });

  // v2: the TaskRun's labels and Event are written while the build user is being provisioned
  // rather than before it, saving a workflow task per TaskRun.
  const v2 = patched(PATCH_FAST_STATIC_PATH);
  for (;;) {
    pool.attempt++;
    pool.requestId = `${workflowInfo().workflowId}#${pool.attempt}`;
    pool.grant = pool.exhausted = undefined;
    const outcome = await allocator.requestSlot.executeWithOptions(
      { summary: `Ask allocator/${input.platform} for a host (attempt ${pool.attempt})` },
      [
        {
          platform: input.platform,
          requestId: pool.requestId,
          workflowId: workflowInfo().workflowId,
          excluded: status.failedHosts,
        },
      ],
    );
    if (outcome.status === 'granted') pool.grant = outcome.host;
    if (outcome.status === 'exhausted') pool.exhausted = outcome.reason;
    if (outcome.status === 'queued') {
      run.publish('Waiting');
      setCurrentDetails(
        `TaskRun ${input.namespace}/${input.name} is waiting for a ${input.platform} host ` +
          `(position ${outcome.position} in line).`,
      );
      await Promise.all([
        patch(run, { labels: { [LABELS.waitingForPlatform]: platformLabel(input.platform) } }),
        event(
          run,
          'Normal',
          'WaitingForHost',
          `Waiting for a ${input.platform} host: ${outcome.position - 1} TaskRun(s) ahead`,
        ),
      ]);
      await condition(
        () => pool.grant !== undefined || pool.exhausted !== undefined || run.ended(),
      );
      if (!pool.grant && run.ended())
        return { served: 'nothing', reason: 'the TaskRun ended while waiting for a host' };
    }
    if (pool.exhausted !== undefined || !pool.grant) {
      const tried = status.failedHosts.length ? ` Tried: ${status.failedHosts.join(', ')}.` : '';
      const last = pool.lastError ? ` Last error: ${pool.lastError}` : '';
      return fail(
        run,
        `no ${input.platform} host could be provisioned for this TaskRun: ${pool.exhausted}.${tried}${last} ` +
          'Retry the build; if it keeps failing, ask the platform operators to check the hosts.',
        { ...labels, [LABELS.waitingForPlatform]: null },
      );
    }

    const host = pool.grant;
    metrics.allocationWait.record((Date.now() - waitingSince) / 1000, { platform: input.platform });
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
    if (!v2) await noteAllocation();
    if (!pool.touched.some((h) => h.name === host.name)) pool.touched.push(host);

    const started = Date.now();
    try {
      const delivered = delivery.deliverBuildUser.executeWithOptions(
        { summary: `Create a build user on ${host.name} (${host.address}) and deliver its Secret` },
        [{ host, taskRun: ref, platform: input.platform }],
      );
      // In v2 the notes are written alongside; a failed delivery still waits for them.
      const [{ user }] = await Promise.all([delivered, v2 ? noteAllocation() : undefined]);
      metrics.provisioning.record((Date.now() - started) / 1000, { platform: input.platform });
      await tellAllocator(() =>
        platformAllocator.signal(hostOutcome, { host: host.name, ok: true }),
      );
      pool.serving = host;
      status.user = user;
      run.publish('Ready');
      return { served: 'static', host: host.name, user };
    } catch (err) {
      pool.lastError = innermostMessage(err);
      status.failedHosts.push(host.name);
      status.host = undefined;
      metrics.provisioningFailures.add(1, { platform: input.platform, host: host.name });
      await Promise.all([
        tellAllocator(() => platformAllocator.signal(hostOutcome, { host: host.name, ok: false })),
        tellAllocator(() => platformAllocator.signal(releaseSlot, { requestId: pool.requestId })),
        patch(run, {
          labels: { [LABELS.assignedHost]: null },
          annotations: { [ANNOTATIONS.failedHosts]: status.failedHosts.join(',') },
        }),
        event(
          run,
          'Warning',
          'ProvisioningFailed',
          `Provisioning on host ${host.name} failed: ${pool.lastError}`,
        ),
      ]);
      pool.requestId = undefined;
    }
  }
}

/** Removes build users (serving host: until it succeeds), deletes the Secret, frees the slot. */
export async function cleanUpStaticPool(
  run: TaskRun,
  deleteSecret: () => Promise<void>,
): Promise<void> {
  const { pool, ref, input } = run;
  const taskRun = { namespace: ref.namespace, taskRunName: ref.name };
  await Promise.all(
    pool.touched.map(async (host) => {
      // A pool VM is retired at max-age anyway, and may be gone: its clean-up is bounded.
      const durable = host.name === pool.serving?.name && !run.cloud?.pool;
      try {
        await (durable ? durableCleanup : boundedCleanup).removeBuildUser.executeWithOptions(
          {
            summary: `Remove build user ${run.status.user ?? 'of this TaskRun'} from ${host.name} (${host.address})`,
          },
          [{ host, ...taskRun }],
        );
      } catch (err) {
        metrics.cleanupFailures.add(1, { platform: input.platform, host: host.name });
        await event(
          run,
          'Warning',
          'CleanupFailed',
          `Could not remove the build user from ${host.name}: ${innermostMessage(err)}`,
        );
      }
    }),
  );
  await deleteSecret();
  if (pool.requestId) {
    await getExternalWorkflowHandle(WORKFLOW_ID.allocator(input.platform))
      .signal(releaseSlot, { requestId: pool.requestId })
      .catch(() => undefined); // no allocator, no slot
  }
  if (pool.touched.length > 0) {
    await event(
      run,
      'Normal',
      'CleanedUp',
      `Removed the build user from ${pool.touched.map((h) => h.name).join(', ')}`,
    );
  }
}

/**
 * The allocator may be gone (terminated by hand, or lost): its slot state went with it, and a
 * new one rebuilds what it needs, so a failed signal changes nothing for this TaskRun. (Before
 * v2 it counted as a provisioning failure of a build user that had in fact been delivered.)
 */
async function tellAllocator(send: () => Promise<void>): Promise<void> {
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
  return kube.patchTaskRunMetadata({ ...run.ref, ...metadata });
}

function event(
  run: TaskRun,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  return note(run, type, reason, message, `${run.pool.attempt}`);
}
