// A dynamic-platform TaskRun, as the multi-platform-controller's "Dynamic" section tells it: take
// one of the platform's max-instances slots (waiting in line if all are in use), launch a VM, wait
// for it on workflow timers (never a blocked worker) within allocation-timeout, create the build
// user, and at the end terminate the VM, retrying until the cloud confirms it.
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { ANNOTATIONS, LABELS, TASKRUN_TAG_KEY } from '../../platform-config/contract.js';
import { innermostMessage } from '../../shared/failures.js';
import type { TaskRunOutcome } from '../../shared/contracts/taskrun.js';
import { bootTimedOut, launchVm, waitForBoot } from '../kit/vm-launch.js';
import { terminateUntilGone } from '../kit/vm-terminate.js';
import { answerWithError } from './answer.js';
import { deliverTo } from './deliver.js';
import { answerForbidden } from './forbidden.js';
import { taskRunKube } from './kubernetes.js';
import { note } from './notes.js';
import { takeSlot } from './slot.js';
import type { TaskRun } from './types.js';

/** Launches tried per TaskRun before giving up (a VM that fails or never answers is replaced). */
const MAX_LAUNCHES = 3;

export async function serveFromOwnVm(
  run: TaskRun,
  cloud: CloudPlatform,
  additionalTags: Record<string, string>,
  labels: Record<string, string>,
): Promise<TaskRunOutcome> {
  const { input, ref, status, pool } = run;
  const k8s = taskRunKube(run);
  const allocationStarted = Date.now();
  pool.vms = [];
  pool.attempt = 1;
  const answer = await takeSlot(run, {
    summary: `Ask allocator/${input.platform} for one of ${cloud.common.maxInstances} VM slots`,
    waitingFor: `one of ${cloud.common.maxInstances} ${input.platform} VM slots`,
    eventKey: '0',
    labels,
  });
  if ('exhausted' in answer) {
    return answerWithError(
      run,
      `no ${input.platform} VM can be launched: ${answer.exhausted}`,
      labels,
    );
  }
  if ('ended' in answer) {
    return { served: 'nothing', reason: 'the TaskRun ended while waiting for a VM slot' };
  }

  const claimed: string[] = [];
  for (let launch = 1; launch <= MAX_LAUNCHES && !run.ended(); launch++) {
    run.publish('Provisioning');
    let vmId: string;
    let sshUser: string;
    const launchKey = `${ref.uid}-${launch}`;
    claimed.push(launchKey);
    try {
      const vm = await launchVm({
        cloud,
        launchKey,
        tags: { ...additionalTags, [TASKRUN_TAG_KEY]: `${ref.namespace}:${ref.name}` },
        summary: `Launch a ${input.platform} VM (attempt ${launch})`,
        claims: claimed,
      });
      vmId = vm.id;
      sshUser = vm.sshUser;
    } catch (err) {
      return answerWithError(
        run,
        `launching a ${input.platform} VM failed: ${innermostMessage(err)}`,
        { ...labels, [LABELS.waitingForPlatform]: null },
      );
    }
    pool.vms.push(vmId);
    status.host = vmId;
    await k8s.patchMetadata({
      labels: { ...labels, [LABELS.waitingForPlatform]: null, [LABELS.assignedHost]: vmId },
      annotations: {
        [ANNOTATIONS.cloudInstanceId]: vmId,
        [ANNOTATIONS.allocationStartTime]: String(Math.floor(allocationStarted / 1000)),
      },
    });

    const address = await waitForSsh(run, cloud, vmId);
    if (address) {
      // Written while the build user is being created, not before it.
      const annotated = k8s.patchMetadata({ annotations: { [ANNOTATIONS.cloudAddress]: address } });
      const host = {
        name: vmId,
        address,
        user: sshUser,
        secret: cloud.common.sshSecret,
        concurrency: 1,
        sudoCommands: cloud.common.sudoCommands,
      };
      const result = await deliverTo(run, host, {
        summary: `Create a build user on VM ${vmId} (${address}) and deliver its Secret`,
        alongside: () => annotated,
      });
      if ('delivered' in result) {
        status.user = result.delivered.user;
        run.publish('Ready');
        await noteVm(run, 'Normal', 'HostAllocated', `VM ${vmId} (${address}) is ready`);
        return { served: 'dynamic', instance: vmId, user: result.delivered.user };
      }
      if ('ended' in result) {
        return {
          served: 'nothing',
          reason: 'the TaskRun ended while its build user was delivered',
        };
      }
      if ('forbidden' in result) {
        await terminate(run, cloud, vmId); // nothing can be delivered: the VM is not kept
        return answerForbidden(run, labels, result.forbidden);
      }
      if ('hostFailed' in result) {
        pool.lastError = `provisioning VM ${vmId} failed: ${result.hostFailed}`;
      } else {
        // Every VM of the platform shares this config (ssh-secret): another launch cannot help.
        const cause = 'final' in result ? result.final : result.hostUnusable;
        return answerWithError(
          run,
          `the build user on ${input.platform} VM ${vmId} could not be delivered: ${cause}. ` +
            'Retry the build; if it keeps failing, ask the platform operators.',
          { ...labels, [LABELS.waitingForPlatform]: null },
        );
      }
    }
    await noteVm(run, 'Warning', 'ProvisioningFailed', pool.lastError ?? `VM ${vmId} failed`);
    await terminate(run, cloud, vmId); // replaced by the next launch
  }
  return answerWithError(
    run,
    `no ${input.platform} VM became usable after ${MAX_LAUNCHES} launches: ${pool.lastError ?? 'the TaskRun ended'}. ` +
      'Retry the build; if it keeps failing, ask the platform operators to check the cloud account and image.',
    { ...labels, [LABELS.waitingForPlatform]: null },
  );
}

/** Waits for the VM's sshd; undefined (with `pool.lastError` saying why) if it never answers. */
async function waitForSsh(
  run: TaskRun,
  cloud: CloudPlatform,
  vmId: string,
): Promise<string | undefined> {
  const booted = await waitForBoot(cloud, vmId, {
    summary: `Check VM ${vmId}`,
    stop: () => run.ended(),
    onBooting: ({ describeFailure }) => {
      if (describeFailure === undefined) return;
      run.pool.lastError = `the cloud did not say how VM ${vmId} is doing: ${innermostMessage(describeFailure)}`;
    },
  });
  if ('ready' in booted) return booted.address;
  if ('failed' in booted) {
    run.pool.lastError = booted.failed;
    return undefined;
  }
  // Timed out, or the TaskRun ended: either way this VM is not used.
  const timedOut = bootTimedOut(cloud, vmId);
  run.pool.lastError =
    booted.describeFailure !== undefined ? `${timedOut}; ${run.pool.lastError}` : timedOut;
  return undefined;
}

async function terminate(run: TaskRun, cloud: CloudPlatform, vmId: string): Promise<void> {
  await terminateUntilGone(cloud, vmId, {
    onFailure: (cause, waitMs) => {
      return noteVm(
        run,
        'Warning',
        'TerminateFailed',
        `Could not terminate VM ${vmId}: ${cause}. Trying again in ${waitMs / 1000} s.`,
      );
    },
  });
  run.pool.vms = (run.pool.vms ?? []).filter((id) => id !== vmId);
}

/** Clean-up: every VM this TaskRun launched is terminated, retried until the cloud confirms. */
export async function terminateVms(run: TaskRun, cloud: CloudPlatform | undefined): Promise<void> {
  if (!cloud) return;
  for (const vmId of [...(run.pool.vms ?? [])]) await terminate(run, cloud, vmId);
}

function noteVm(
  run: TaskRun,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  return note(run, type, reason, message, `${(run.pool.vms ?? []).length}`);
}
