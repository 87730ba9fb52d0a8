// Host keys of a dynamic platform's VMs (issue 24 item 2), on the cloud scenarios' stack: the
// engine generates each VM's host key at launch, gives it in the user data and records it, so it
// knows the key before it first connects and never trusts a VM on first use. The test VMs are
// sshd test hosts; ec2-vms.ts installs the host key from the instance's user data, the stand-in
// for cloud-init there (local-stack/cloud-init-stand-in.ts). An impostor at a VM's address
// (ec2-vms.ts `impostorNext`) presents a key of its own.
import { describe, expect, it } from '@jest/globals';
import { HOST_KEY_STORE_NAME } from '../../activities/kubernetes/host-key-store.js';
import { GENERATED_KEY_COMMENT } from '../../activities/cloud/vm-host-key.js';
import { waitFor } from '../../local-stack/process.js';
import { ANNOTATIONS, HOST_CONFIG_NAME } from '../../platform-config/contract.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { historyText } from './history-text.js';
import { waitForSecretExplained } from './taskrun-explained.js';
import type { TestScope } from './scope.js';
import type { VmCloud } from './vm-cloud.js';

export interface VmHostKeyContext {
  platform: string;
  /** The scenarios' stack, once beforeAll has made it. */
  stack: () => { scope: TestScope; cloud: VmCloud };
  /** The scenarios' host-config. */
  hostConfig: () => Record<string, string>;
}

export function describeVmHostKeys({ platform, stack, hostConfig }: VmHostKeyContext): void {
  const engineEvents = async (reason: string) => {
    const { scope } = stack();
    const list = await scope.kube.core.listNamespacedEvent({ namespace: scope.engineNamespace });
    return list.items.filter(
      (e) => e.involvedObject.name === HOST_CONFIG_NAME && e.reason === reason,
    );
  };
  const recorded = async (id: string) => {
    const { scope } = stack();
    const map = await scope.kube.core.readNamespacedConfigMap({
      name: HOST_KEY_STORE_NAME,
      namespace: scope.engineNamespace,
    });
    return map.data?.[`host.${id}`];
  };
  const taskRunEvents = async (uid: string) => {
    const { scope } = stack();
    const list = await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace });
    return list.items.filter((e) => e.involvedObject.uid === uid);
  };

  describe('host keys of its VMs (issue 24 item 2)', () => {
    it('serves a VM that presents the host key generated for it at launch, trusting nothing on first use, even with require-host-keys', async () => {
      const { scope, cloud } = stack();
      await scope.setHostConfig({ ...hostConfig(), 'require-host-keys': 'true' });
      try {
        const tr = await scope.taskRuns.create({ name: 'vm-key', platform });
        const secret = await waitForSecretExplained(scope, tr, 180_000, () =>
          cloud.errors().map((e) => `VM stand-in: ${e}`),
        );
        expect(secret.error).toBeUndefined();
        const meta = (await scope.taskRuns.get(tr.name)).metadata;
        const id = meta.annotations![ANNOTATIONS.cloudInstanceId]!;
        expect(secret.host!.split('@')[1]).toBe(cloud.hosts().get(id)!.address);
        // The engine recorded, before connecting, the key the VM was given in its user data.
        expect(await recorded(id)).toBe(
          `${cloud.hosts().get(id)!.hostPublicKey} ${GENERATED_KEY_COMMENT}`,
        );
        const firstUse = await engineEvents('HostKeyTrustedOnFirstUse');
        expect(firstUse.filter((e) => e.message?.includes(id))).toEqual([]);
        // The private host key travelled in the user data only, never through the workflow.
        const history = await historyText(
          scope.temporal.client,
          WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
        );
        expect(history).toContain(id);
        for (const secretPart of ['PRIVATE KEY', 'ssh_keys', 'ed25519_private']) {
          expect(history).not.toContain(secretPart);
        }
        await scope.taskRuns.complete(tr.name);
        await scope.taskRuns.waitForSecretGone(tr.name, 90_000);
        // The record goes with the VM: the store keeps only hosts that may still answer.
        await waitFor(`the host key of ${id} to be forgotten`, async () =>
          (await recorded(id)) === undefined ? true : undefined,
        );
      } finally {
        await scope.setHostConfig(hostConfig());
      }
    }, 360_000);

    it('refuses an impostor at a VM address as a host failure: no login, no build user, the build is served on another VM', async () => {
      const { scope, cloud } = stack();
      cloud.impostorNext!();
      const tr = await scope.taskRuns.create({ name: 'vm-impostor', platform });
      const secret = await waitForSecretExplained(scope, tr, 180_000, () =>
        cloud.errors().map((e) => `VM stand-in: ${e}`),
      );
      expect(secret.error).toBeUndefined();
      const impostor = cloud.impostors!().at(-1)!; // the TaskRun's first VM
      const served = (await scope.taskRuns.get(tr.name)).metadata.annotations![
        ANNOTATIONS.cloudInstanceId
      ]!;
      expect(served).not.toBe(impostor);
      expect(secret.host!.split('@')[1]).toBe(cloud.hosts().get(served)!.address);
      const failed = (await taskRunEvents(tr.uid)).find((e) => e.reason === 'ProvisioningFailed');
      expect(failed?.message).toMatch(
        new RegExp(
          `provisioning VM ${impostor} failed: ssh host ${impostor} \\(.*\\) presented host key ` +
            'SHA256:\\S+ \\(ssh-ed25519\\), not the one hostflow generated for this VM',
        ),
      );
      const mismatch = await engineEvents('HostKeyMismatch');
      expect(mismatch.some((e) => e.type === 'Warning' && e.message?.includes(impostor))).toBe(
        true,
      );
      // The impostor was terminated; its sshd saw no login at all (the key is checked before
      // authentication), so no build user, OTP or Secret of the build went to it.
      const logins = await waitFor(`the impostor ${impostor}'s host to stop`, async () =>
        cloud.impostorLogins!(impostor),
      );
      expect(logins).toEqual([]);
      await scope.taskRuns.complete(tr.name);
      await scope.taskRuns.waitForSecretGone(tr.name, 90_000);
    }, 360_000);
  });
}
