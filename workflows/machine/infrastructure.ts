// Where a Machine's host comes from, through the same allocator as builds: a slot of its
// platform (one of max-instances for a dynamic platform, one of a static host's slots), then for
// a dynamic platform a VM of its own, launched once per Machine (the launch key is its uid,
// claimed before launching so garbage collection spares it) and waited for on timers.
import { patched, setCurrentDetails, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import type { MachineAddress } from '../../shared/machine-api.js';
import { innermostMessage } from '../../shared/failures.js';
import { SA } from '../../shared/search-attributes.js';
import type { Host } from '../../shared/types.js';
import { cloud as cloudApi, durableTerminate } from '../activities.js';
import { checkVmBoot } from '../cloud/vm-boot.js';
import { giveSlotBack, requestSlot, type SlotMail } from '../kit/allocator-slot.js';

/**
 * v2: a Machine on a static platform asks for a host that serves machines (never a build host:
 * its bootstrap data runs as root there).
 */
export const PATCH_MACHINE_HOSTS = 'machine-asks-for-a-machine-host';

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
  const machineHost = infra.kind === 'static' && patched(PATCH_MACHINE_HOSTS);
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
    upsertSearchAttributes([{ key: SA.cloudLaunches, value: [infra.launchKey!] }]);
    try {
      const vm = await cloudApi.launchInstance.executeWithOptions(
        { summary: `Launch a ${infra.platform} VM` },
        [
          {
            cloud,
            launchKey: infra.launchKey!,
            tags: infra.tags,
            userDataSecret: infra.userDataSecret,
          },
        ],
      );
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
  const deadline = Date.now() + cloud.common.allocationTimeoutSeconds * 1000;
  const interval = cloud.common.checkIntervalSeconds * 1000;
  for (;;) {
    const check = await checkVmBoot(cloud, id, {
      summary: `Check VM ${id}`,
      waitMs: Math.max(0, Math.min(interval, deadline - Date.now())),
    });
    if ('ready' in check) {
      const vm = await cloudApi.describeInstance({ cloud, id });
      infra.host = { ...infra.host!, address: check.address };
      infra.providerID = providerIdOf(cloud, id, vm?.zone);
      infra.addresses = [{ type: 'InternalIP', address: check.address }];
      return { ok: true };
    }
    if ('failed' in check) return { failed: check.failed };
    if (stop()) return { stopped: true };
    if (Date.now() >= deadline) {
      return {
        failed: `VM ${id} did not answer SSH within allocation-timeout (${cloud.common.allocationTimeoutSeconds}s)`,
      };
    }
    setCurrentDetails(`Waiting for VM ${id} to boot (${check.state ?? 'not visible yet'}).`);
    if (!check.sshChecked) await sleep(Math.min(interval, deadline - Date.now()));
  }
}

/** As each provider's Cluster API provider writes it (CAPA, CAPIBM). */
function providerIdOf(cloud: CloudPlatform, id: string, zone: string | undefined): string {
  switch (cloud.provider.type) {
    case 'aws':
      return `aws:///${zone ?? ''}/${id}`;
    case 'ibmz':
      return `ibm:///${zone ?? ''}/${id}`;
    case 'ibmp':
      return `ibmpowervs://${zone ?? ''}/${id}`;
  }
}

/** Terminates the VM until the cloud confirms it; gives the slot back. Idempotent. */
export async function releaseInfrastructure(
  infra: MachineInfra,
  onTerminateFailure: (message: string, waitMs: number) => Promise<void>,
): Promise<void> {
  if (infra.kind === 'dynamic' && infra.instanceId) {
    for (let failures = 0; ; failures++) {
      try {
        await durableTerminate.terminateInstance.executeWithOptions(
          { summary: `Terminate VM ${infra.instanceId}` },
          [{ cloud: infra.cloud!, id: infra.instanceId }],
        );
        break;
      } catch (err) {
        const waitMs = Math.min(10_000 * 2 ** failures, 30 * 60_000);
        await onTerminateFailure(innermostMessage(err), waitMs);
        await sleep(waitMs);
      }
    }
  }
  if (infra.granted) {
    await giveSlotBack(infra.platform, infra.requestId);
    infra.granted = false;
    upsertSearchAttributes([{ key: SA.host, value: null }]);
  }
}
