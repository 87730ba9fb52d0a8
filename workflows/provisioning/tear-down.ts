// A Provisioning's end: kubespray resets the nodes it touched, every host it held is released
// (the installer key taken back first) along with every Lock, and what it made next to the
// cluster (the kubeconfig Secret, the IP map) goes.
import { isCancellation, log } from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import { releaseLocks } from '../../locks/hold.js';
import { provisioningApi } from './activity-proxies.js';
import { revokeInstallerKey } from './host-hold.js';
import { runPlaybook } from './kubespray.js';
import { unionNodes } from './plans.js';
import type { Provisioner } from './provisioner.js';

/** Resets what kubespray touched, frees the hosts and removes what it made. */
export async function tearDown(provisioner: Provisioner): Promise<void> {
  const { ref, report } = provisioner;
  await report.step('Deleting', 'Reset the hosts and release them');
  if (provisioner.touched.length) {
    try {
      const nodes = provisioner.touched;
      await runPlaybook(provisioner, 'reset.yml', nodes, {
        podSubnet: provisioner.installed?.podSubnet,
        plugins: [],
        kubesprayRelease: provisioner.installed?.kubesprayRelease,
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // A host that is gone cannot be reset; it is released all the same.
      await report.event('Warning', 'ResetFailed', innermostMessage(err));
    }
  }
  await revokeInstallerKey(provisioner, unionNodes(provisioner.touched, provisioner.held));
  provisioner.held = [];
  provisioner.touched = [];
  await provisioningApi.releaseBareMetalHosts({ consumer: ref });
  // A Lock left behind would refuse the host's deletion long after the cluster is gone.
  await releaseLocks({
    alsoIn: provisioner.lockedInSorted(),
    // A failure is waited out as untilDone waits it out, and marked as it is (kit/retry.ts).
    waitsOut: (err) => {
      if (isCancellation(err)) return false;
      return true;
    },
    onPending: (cause, attempt) =>
      log.warn(`${provisioner.consumer}: cannot release its Locks, try ${attempt}`, { cause }),
  });
  if (provisioner.cluster)
    await provisioningApi.deleteClusterOutputs({
      namespace: ref.namespace,
      cluster: provisioner.cluster,
      owner: ref,
    });
}
