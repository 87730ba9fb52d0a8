// Bringing a VM up, the same way for a dynamic TaskRun's own VM, a Machine's VM and a pool's VMs:
// claim the launch key, launch (idempotent per key), then check on workflow timers (never a
// blocked worker) until its sshd answers, the cloud says it failed, or allocation-timeout passes.
// Each family says what happens next; see kit/vm-terminate.ts for taking it down.
import {
  proxyActivities,
  setCurrentDetails,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { CloudActivities } from '../../activities/cloud/instances.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { SA } from '../../shared/search-attributes.js';
import { BOOT_CHECK, CLOUD_CALL } from './activity-options.js';

const cloudApi = proxyActivities<CloudActivities>(CLOUD_CALL);
const cloudCheck = proxyActivities<CloudActivities>(BOOT_CHECK);

/** Cloud states a booting VM never comes back from. */
const FAILED_STATES = ['failed', 'stopped', 'stopping', 'terminated'];

/** The launch activity's input: the key a retried launch returns the same VM for, tags, user-data. */
type LaunchInput = Parameters<CloudActivities['launchInstance']>[0];

export interface VmLaunch extends LaunchInput {
  summary: string;
  /**
   * Every launch key the workflow claims, this one included: published as its CloudLaunches
   * search attribute before launching, so garbage collection spares the VM. Left out by a caller
   * that publishes its claims itself (the pool).
   */
  claims?: readonly string[];
}

/** Claims the key (see `claims`) and launches; a failed launch is thrown. */
export async function launchVm(launch: VmLaunch) {
  const { cloud, launchKey, tags, userDataSecret, summary, claims } = launch;
  if (claims) upsertSearchAttributes([{ key: SA.cloudLaunches, value: [...claims] }]);
  return cloudApi.launchInstance.executeWithOptions({ summary }, [
    { cloud, launchKey, tags, ...(userDataSecret ? { userDataSecret } : {}) },
  ]);
}

export interface BootCheckOptions {
  summary: string;
  /** Epoch ms by which sshd must answer (allocation-timeout after the wait began). */
  deadline: number;
}

export type BootCheck =
  | { ready: true; address: string }
  | { failed: string }
  | {
      booting: true;
      /** The cloud's state, when it answered. */
      state?: string;
      address?: string;
      /** The describe call failed (throttled, credentials revoked…): the VM's state is unknown. */
      describeFailure?: unknown;
      /** When to check again: at once if the SSH check already waited, else one check-interval. */
      nextCheckMs: number;
    };

/** One check: the cloud's state, and once it runs with an address, whether its sshd answers. */
export async function checkBoot(
  cloud: CloudPlatform,
  vmId: string,
  options: BootCheckOptions,
): Promise<BootCheck> {
  const interval = cloud.common.checkIntervalSeconds * 1000;
  // Waits for sshd up to a check-interval, so a VM is used the moment it is ready.
  const waitMs = Math.max(0, Math.min(interval, options.deadline - Date.now()));
  let vm;
  try {
    vm = await cloudCheck.describeInstance.executeWithOptions({ summary: options.summary }, [
      { cloud, id: vmId },
    ]);
  } catch (err) {
    return { booting: true, describeFailure: err, nextCheckMs: interval };
  }
  if (vm && FAILED_STATES.includes(vm.state))
    return { failed: `VM ${vmId} went ${vm.state} while booting` };
  if (vm?.state === 'running' && vm.address) {
    if (await cloudApi.sshReachable({ address: vm.address, ...(waitMs ? { waitMs } : {}) })) {
      return { ready: true, address: vm.address };
    }
    return {
      booting: true,
      state: vm.state,
      address: vm.address,
      nextCheckMs: 0,
    };
  }
  return { booting: true, state: vm?.state, address: vm?.address, nextCheckMs: interval };
}

export const bootTimedOut = (cloud: CloudPlatform, vmId: string): string =>
  `VM ${vmId} did not answer SSH within allocation-timeout (${cloud.common.allocationTimeoutSeconds}s)`;

export type Booted =
  | { ready: true; address: string }
  | { failed: string }
  /** allocation-timeout passed; with the last check's describe failure, if it failed. */
  | { timedOut: string; describeFailure?: unknown }
  | { stopped: true; describeFailure?: unknown };

export interface BootWait extends Omit<BootCheckOptions, 'deadline'> {
  /** The VM's object has ended (the TaskRun, the Machine being deleted): waiting stops. */
  stop: () => boolean;
  /** Each check that found the VM still booting, before the wait goes on (or ends). */
  onBooting?: (check: Extract<BootCheck, { booting: true }>) => void;
}

/** Checks every check-interval until sshd answers, the VM fails, `stop`, or allocation-timeout. */
export async function waitForBoot(
  cloud: CloudPlatform,
  vmId: string,
  wait: BootWait,
): Promise<Booted> {
  const deadline = Date.now() + cloud.common.allocationTimeoutSeconds * 1000;
  for (;;) {
    const check = await checkBoot(cloud, vmId, { ...wait, deadline });
    if (!('booting' in check)) return check;
    wait.onBooting?.(check);
    const { describeFailure } = check;
    if (wait.stop()) return { stopped: true, describeFailure };
    const left = deadline - Date.now();
    if (left <= 0) return { timedOut: bootTimedOut(cloud, vmId), describeFailure };
    const at = check.address ? `, ${check.address}` : '';
    setCurrentDetails(`Waiting for VM ${vmId} to boot (${check.state ?? 'not visible yet'}${at}).`);
    if (check.nextCheckMs > 0) await sleep(Math.min(check.nextCheckMs, left));
  }
}
