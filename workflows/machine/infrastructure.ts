// Where a HostflowMachine's host comes from, through the same allocator as builds: a slot of its
// platform (one of max-instances for a dynamic platform, one of a static host's slots), then for
// a dynamic platform a VM of its own, launched once per Machine (the launch key is the Machine's uid,
// claimed before launching so garbage collection spares it) and waited for on timers.
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { machineProviderId } from '../../platform-config/cloud-providers.js';
import type { MachineAddress } from '../../shared/machine-api.js';
import { innermostMessage } from '../../shared/failures.js';
import { SA } from '../../shared/search-attributes.js';
import type { Host } from '../../platform-config/host.js';
import { cloudApi } from './activity-proxies.js';
import { giveSlotBack, requestSlot, type SlotMail } from '../kit/allocator-slot.js';
import { launchVm as launchInstance, waitForBoot } from '../kit/vm-launch.js';
import { terminateUntilGone } from '../kit/vm-terminate.js';

/** What a Machine holds, carried across continue-as-new. */
export interface MachineInfra {
  platform: string;
  kind: 'static' | 'dynamic';
  requestId: string;
  /** Its slot was granted (and so must be released). */
  granted?: boolean;
  cloud?: CloudPlatform;
  launchKey?: string;
  /** The VM's tags (MachineName, cluster) and its user-data: the bootstrap Secret. */
  tags: Record<string, string>;
  userDataSecret: { namespace: string; name: string };
  instanceId?: string;
  /** How SSH reaches the host, with the admin key's Secret in the engine namespace. */
  host?: { name: string; address: string; port?: number; user: string; keySecret: string };
  providerID?: string;
  addresses?: MachineAddress[];
  /** The cloud's zone the VM runs in: the HostflowMachine's failure domain. */
  zone?: string;
}

export type Acquired = { ok: true } | { failed: string } | { stopped: true };

/**
 * Takes the slot and, on a dynamic platform, launches and boots the VM. `stop` says the Machine
 * is being deleted: waiting ends there, and what was taken is in `infra` for the clean-up.
 */
export async function acquire(
  infra: MachineInfra,
  mail: SlotMail,
  workflowId: string,
  stop: () => boolean,
): Promise<Acquired> {
  if (!infra.granted) {
    const answer = await takeSlot(infra, mail, workflowId, stop);
    if ('stopped' in answer || 'failed' in answer) return answer;
    infra.granted = true;
    upsertSearchAttributes([{ key: SA.host, value: answer.host.name }]);
    if (infra.kind === 'static') {
      const host = answer.host;
      infra.host = {
        name: host.name,
        address: host.address,
        ...(host.port ? { port: host.port } : {}),
        user: host.user,
        keySecret: host.secret,
      };
      infra.providerID = `hostflow://static/${host.name}`;
      infra.addresses = [
        { type: 'InternalIP', address: host.address },
        { type: 'Hostname', address: host.name },
      ];
      return { ok: true };
    }
  }
  return infra.kind === 'dynamic' ? launchVm(infra, stop) : { ok: true };
}

async function takeSlot(
  infra: MachineInfra,
  mail: SlotMail,
  workflowId: string,
  stop: () => boolean,
): Promise<{ host: Host } | { failed: string } | { stopped: true }> {
  // A static host that serves machines, never a build host: its bootstrap data runs as root there.
  const machineHost = infra.kind === 'static';
  const answer = await requestSlot({
    platform: infra.platform,
    request: {
      requestId: infra.requestId,
      workflowId,
      excluded: [],
      ...(machineHost ? { serves: 'machines' as const } : {}),
    },
    summary: `Ask allocator/${infra.platform} for a slot`,
    mail,
    ended: stop,
    inLine: (position) =>
      setCurrentDetails(`Waiting for a ${infra.platform} slot (position ${position} in line).`),
  });
  if ('granted' in answer) return { host: answer.granted };
  if ('exhausted' in answer) return { failed: answer.exhausted };
  return { stopped: true };
}

async function launchVm(infra: MachineInfra, stop: () => boolean): Promise<Acquired> {
  const cloud = infra.cloud!;
  if (!infra.instanceId) {
    try {
      const vm = await launchInstance({
        cloud,
        launchKey: infra.launchKey!,
        tags: infra.tags,
        userDataSecret: infra.userDataSecret,
        summary: `Launch a ${infra.platform} VM`,
        claims: [infra.launchKey!],
      });
      infra.instanceId = vm.id;
      infra.host = {
        name: vm.id,
        address: '',
        user: vm.sshUser,
        keySecret: cloud.common.sshSecret,
      };
    } catch (err) {
      return { failed: `launching a ${infra.platform} VM failed: ${innermostMessage(err)}` };
    }
    upsertSearchAttributes([{ key: SA.host, value: infra.instanceId }]);
  }
  const id = infra.instanceId;
  const booted = await waitForBoot(cloud, id, { summary: `Check VM ${id}`, stop });
  if ('ready' in booted) {
    const vm = await cloudApi.describeInstance({ cloud, id });
    infra.host = { ...infra.host!, address: booted.address };
    infra.providerID = machineProviderId(cloud.provider.type, id, vm?.zone);
    infra.addresses = [{ type: 'InternalIP', address: booted.address }];
    if (vm?.zone) infra.zone = vm.zone;
    return { ok: true };
  }
  if ('stopped' in booted) return { stopped: true };
  return { failed: 'failed' in booted ? booted.failed : booted.timedOut };
}

/** Terminates the VM until the cloud confirms it; gives the slot back. Idempotent. */
export async function releaseInfrastructure(
  infra: MachineInfra,
  onTerminateFailure: (message: string, waitMs: number) => Promise<void>,
): Promise<void> {
  if (infra.kind === 'dynamic' && infra.instanceId) {
    await terminateUntilGone(infra.cloud!, infra.instanceId, { onFailure: onTerminateFailure });
  }
  if (infra.granted) {
    await giveSlotBack(infra.platform, infra.requestId);
    infra.granted = false;
    upsertSearchAttributes([{ key: SA.host, value: null }]);
  }
}
