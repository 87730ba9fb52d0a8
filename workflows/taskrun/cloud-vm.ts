// A dynamic-platform TaskRun, as the seed's "Dynamic" section tells it: take one of the
// platform's max-instances slots (waiting in line if all are in use), launch a VM, wait for it
// on workflow timers (never a blocked worker) within allocation-timeout, create the build user,
// and at the end terminate the VM, retrying until the cloud confirms it.
import {
  condition,
  patched,
  setCurrentDetails,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import {
  ANNOTATIONS,
  LABELS,
  TASKRUN_TAG_KEY,
  platformLabel,
} from '../../platform-config/contract.js';
import { allocator, cloud as cloudApi, delivery, durableTerminate, kube } from '../activities.js';
import { innermostMessage, note } from './notes.js';
import { SA } from '../../shared/search-attributes.js';
import type { TaskRunOutcome } from '../../shared/types.js';
import type { Fail, TaskRun } from './types.js';

/** Launches tried per TaskRun before giving up (a VM that fails or never answers is replaced). */
const MAX_LAUNCHES = 3;
/** v2: every launch key is claimed (CloudLaunches) before launching, for orphan collection. */
export const PATCH_CLAIM_LAUNCHES = 'cloud-vm-claim-launches';
export const PATCH_PATIENT_SSH_CHECK = 'cloud-vm-patient-ssh-check';
export const PATCH_ANNOTATE_ALONGSIDE = 'cloud-vm-annotate-alongside-delivery';
/** v2: a terminate failing for good is tried again on a timer instead of failing the workflow. */
export const PATCH_TERMINATE_UNTIL_GONE = 'cloud-vm-terminate-until-gone';
const TERMINATE_RETRY_MAX_MS = 30 * 60_000;

export async function serveFromCloud(
  run: TaskRun,
  cloud: CloudPlatform,
  additionalTags: Record<string, string>,
  labels: Record<string, string>,
  fail: Fail,
): Promise<TaskRunOutcome> {
  const { input, ref, status, pool } = run;
  pool.vms = [];
  pool.attempt = 1;
  pool.requestId = `${workflowInfo().workflowId}#1`;
  const answer = await allocator.requestSlot.executeWithOptions(
    { summary: `Ask allocator/${input.platform} for one of ${cloud.common.maxInstances} VM slots` },
    [
      {
        platform: input.platform,
        requestId: pool.requestId,
        workflowId: workflowInfo().workflowId,
        excluded: [],
      },
    ],
  );
  if (answer.status === 'exhausted')
    return fail(run, `no ${input.platform} VM can be launched: ${answer.reason}`, labels);
  if (answer.status === 'queued') {
    run.publish('Waiting');
    setCurrentDetails(
      `Waiting for one of ${cloud.common.maxInstances} ${input.platform} VM slots (position ${answer.position}).`,
    );
    await Promise.all([
      kube.patchTaskRunMetadata({
        ...ref,
        labels: { ...labels, [LABELS.waitingForPlatform]: platformLabel(input.platform) },
      }),
      noteVm(
        run,
        'Normal',
        'WaitingForHost',
        `Waiting for a ${input.platform} VM: all ${cloud.common.maxInstances} instances are in use`,
      ),
    ]);
    await condition(() => pool.grant !== undefined || pool.exhausted !== undefined || run.ended());
    if (pool.exhausted !== undefined)
      return fail(run, `no ${input.platform} VM can be launched: ${pool.exhausted}`, labels);
    if (!pool.grant)
      return { served: 'nothing', reason: 'the TaskRun ended while waiting for a VM slot' };
  }

  const claimed: string[] = [];
  for (let launch = 1; launch <= MAX_LAUNCHES && !run.ended(); launch++) {
    run.publish('Provisioning');
    let vmId: string;
    let sshUser: string;
    const launchKey = `${ref.uid}-${launch}`;
    if (patched(PATCH_CLAIM_LAUNCHES)) {
      claimed.push(launchKey);
      upsertSearchAttributes([{ key: SA.cloudLaunches, value: [...claimed] }]);
    }
    try {
      const vm = await cloudApi.launchInstance.executeWithOptions(
        { summary: `Launch a ${input.platform} VM (attempt ${launch})` },
        [
          {
            cloud,
            launchKey,
            tags: { ...additionalTags, [TASKRUN_TAG_KEY]: `${ref.namespace}:${ref.name}` },
          },
        ],
      );
      vmId = vm.id;
      sshUser = vm.sshUser;
    } catch (err) {
      return fail(run, `launching a ${input.platform} VM failed: ${innermostMessage(err)}`, {
        ...labels,
        [LABELS.waitingForPlatform]: null,
      });
    }
    pool.vms.push(vmId);
    status.host = vmId;
    await kube.patchTaskRunMetadata({
      ...ref,
      labels: { ...labels, [LABELS.waitingForPlatform]: null, [LABELS.assignedHost]: vmId },
      annotations: { [ANNOTATIONS.cloudInstanceId]: vmId },
    });

    const address = await waitForSsh(run, cloud, vmId);
    if (address) {
      const annotated = kube.patchTaskRunMetadata({
        ...ref,
        annotations: { [ANNOTATIONS.cloudAddress]: address },
      });
      // v2: the annotation is written while the build user is being created, not before.
      if (!patched(PATCH_ANNOTATE_ALONGSIDE)) await annotated;
      const host = {
        name: vmId,
        address,
        user: sshUser,
        secret: cloud.common.sshSecret,
        concurrency: 1,
        sudoCommands: cloud.common.sudoCommands,
      };
      try {
        const [{ user }] = await Promise.all([
          delivery.deliverBuildUser.executeWithOptions(
            { summary: `Create a build user on VM ${vmId} (${address}) and deliver its Secret` },
            [{ host, taskRun: ref, platform: input.platform }],
          ),
          annotated,
        ]);
        status.user = user;
        run.publish('Ready');
        await noteVm(run, 'Normal', 'HostAllocated', `VM ${vmId} (${address}) is ready`);
        return { served: 'dynamic', instance: vmId, user };
      } catch (err) {
        await annotated; // a failed delivery still waits for its annotation
        pool.lastError = `provisioning VM ${vmId} failed: ${innermostMessage(err)}`;
      }
    }
    await noteVm(run, 'Warning', 'ProvisioningFailed', pool.lastError ?? `VM ${vmId} failed`);
    await terminate(run, cloud, vmId); // replaced by the next launch
  }
  return fail(
    run,
    `no ${input.platform} VM became usable after ${MAX_LAUNCHES} launches: ${pool.lastError ?? 'the TaskRun ended'}. ` +
      'Retry the build; if it keeps failing, ask the platform operators to check the cloud account and image.',
    { ...labels, [LABELS.waitingForPlatform]: null },
  );
}

/** Polls on workflow timers every check-interval until SSH answers, the VM fails, or allocation-timeout passes. */
async function waitForSsh(
  run: TaskRun,
  cloud: CloudPlatform,
  vmId: string,
): Promise<string | undefined> {
  const deadline = Date.now() + cloud.common.allocationTimeoutSeconds * 1000;
  const interval = cloud.common.checkIntervalSeconds * 1000;
  // v2: once the VM runs, the SSH check itself waits up to one check-interval for port 22.
  const patient = patched(PATCH_PATIENT_SSH_CHECK);
  for (;;) {
    const vm = await cloudApi.describeInstance.executeWithOptions({ summary: `Check VM ${vmId}` }, [
      { cloud, id: vmId },
    ]);
    if (vm && ['failed', 'stopped', 'stopping', 'terminated'].includes(vm.state)) {
      run.pool.lastError = `VM ${vmId} went ${vm.state} while booting`;
      return undefined;
    }
    const running = vm?.state === 'running' && vm.address !== undefined;
    if (running) {
      const waitMs = patient ? Math.max(0, Math.min(interval, deadline - Date.now())) : undefined;
      if (await cloudApi.sshReachable({ address: vm.address!, ...(waitMs ? { waitMs } : {}) })) {
        return vm.address;
      }
    }
    const left = deadline - Date.now();
    if (left <= 0 || run.ended()) {
      run.pool.lastError = `VM ${vmId} did not answer SSH within allocation-timeout (${cloud.common.allocationTimeoutSeconds}s)`;
      return undefined;
    }
    setCurrentDetails(
      `Waiting for VM ${vmId} to boot (${vm?.state ?? 'not visible yet'}${vm?.address ? `, ${vm.address}` : ''}).`,
    );
    if (!(patient && running)) await sleep(Math.min(interval, left));
  }
}

async function terminate(run: TaskRun, cloud: CloudPlatform, vmId: string): Promise<void> {
  for (let failures = 0; ; failures++) {
    try {
      await durableTerminate.terminateInstance.executeWithOptions(
        { summary: `Terminate VM ${vmId}` },
        [{ cloud, id: vmId }],
      );
      break;
    } catch (err) {
      // Transient errors are retried inside the activity; this is a permanent one (say, the
      // credentials Secret was deleted). The VM is never dropped: tell people, wait, try again.
      if (!patched(PATCH_TERMINATE_UNTIL_GONE)) throw err;
      const waitMs = Math.min(10_000 * 2 ** failures, TERMINATE_RETRY_MAX_MS);
      await noteVm(
        run,
        'Warning',
        'TerminateFailed',
        `Could not terminate VM ${vmId}: ${innermostMessage(err)}. Trying again in ${waitMs / 1000} s.`,
      );
      await sleep(waitMs);
    }
  }
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
