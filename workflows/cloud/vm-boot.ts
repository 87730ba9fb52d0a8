// Has a booting VM come up? One check, shared by a dynamic TaskRun's own VM and a dynamic
// pool's VMs: ask the cloud for its state, and once it runs with an address, whether its sshd
// answers (waiting up to `waitMs` for it, so a VM is used the moment it is ready).
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { cloud as cloudApi, cloudCheck } from '../activities.js';

/** Cloud states a booting VM never comes back from. */
const FAILED_STATES = ['failed', 'stopped', 'stopping', 'terminated'];

export type BootCheck =
  | { ready: true; address: string }
  | { failed: string }
  | {
      booting: true;
      /** The cloud's state, when it answered. */
      state?: string;
      address?: string;
      /** The SSH check ran (and so already waited up to `waitMs`). */
      sshChecked: boolean;
      /** The describe call failed (throttled, credentials revoked…): the VM's state is unknown. */
      describeFailure?: unknown;
    };

export async function checkVmBoot(
  cloud: CloudPlatform,
  vmId: string,
  options: { summary: string; waitMs?: number },
): Promise<BootCheck> {
  let vm;
  try {
    vm = await cloudCheck.describeInstance.executeWithOptions({ summary: options.summary }, [
      { cloud, id: vmId },
    ]);
  } catch (err) {
    return { booting: true, sshChecked: false, describeFailure: err };
  }
  if (vm && FAILED_STATES.includes(vm.state))
    return { failed: `VM ${vmId} went ${vm.state} while booting` };
  if (vm?.state === 'running' && vm.address) {
    const waitMs = options.waitMs;
    if (await cloudApi.sshReachable({ address: vm.address, ...(waitMs ? { waitMs } : {}) })) {
      return { ready: true, address: vm.address };
    }
    return { booting: true, state: vm.state, address: vm.address, sshChecked: true };
  }
  return { booting: true, state: vm?.state, address: vm?.address, sshChecked: false };
}
