// Holding and releasing a Provisioning's hosts. While it holds hosts it locks them against
// deletion, and its own spec while kubespray or an operation runs; a host it lets go has the
// installer key taken back first, then goes back to the free ones. A Lock protects, it never
// gates: one that cannot be written is said in the log and the work goes on.
import { isCancellation, log } from '@temporalio/workflow';
import {
  BAREMETALHOST_API,
  installerKeySecretName,
  PROVISIONING_API,
} from '../../shared/bpa-api.js';
import { innermostMessage } from '../../shared/failures.js';
import type { LockTarget } from '../../locks/api.js';
import { releaseLocks, takeLocks } from '../../locks/hold.js';
import { installerKey, provisioningApi } from './activity-proxies.js';
import type { ProvisioningNode } from './nodes.js';
import { withoutNodes } from './plans.js';
import type { Provisioner } from './provisioner.js';

/** Locks its spec and itself against deletion while an operation runs (`why`); or lets go. */
export function holdForOperation(provisioner: Provisioner, why?: string): Promise<void> {
  return lock(provisioner, why, ['UPDATE', 'DELETE']);
}

/** Lets go of every Lock, one try (a cancelled run's non-cancellable clean-up). */
export async function unlockAll(provisioner: Provisioner): Promise<void> {
  await releaseLocks({ alsoIn: provisioner.lockedInSorted(), waitsOut: () => false });
}

/** Nodes kubespray has reset or removed: their hosts go back to the free ones. */
export async function letGo(provisioner: Provisioner, nodes: ProvisioningNode[]): Promise<void> {
  await revokeInstallerKey(provisioner, nodes);
  provisioner.touched = withoutNodes(provisioner.touched, nodes);
  provisioner.held = withoutNodes(provisioner.held, nodes);
  await release(provisioner);
}

/** Frees the hosts of this Provisioning that it no longer holds. */
export async function release(provisioner: Provisioner): Promise<void> {
  await provisioningApi.releaseBareMetalHosts({
    consumer: provisioner.ref,
    keep: provisioner.held.map((n) => n.host),
  });
  await lock(provisioner);
}

/**
 * Takes the cluster's installer key back from hosts leaving it. A host that cannot be reached
 * is released all the same (it may be gone for good), with a Warning saying so.
 */
export async function revokeInstallerKey(
  provisioner: Provisioner,
  nodes: ProvisioningNode[],
): Promise<void> {
  const { ref } = provisioner;
  if (nodes.length === 0 || !provisioner.cluster) return;
  try {
    const inventory = await provisioningApi.listBareMetalHosts({ consumer: { ...ref } });
    const hosts = nodes.flatMap(({ label, ip, user, host, hostKey }) => {
      const found = inventory.find((h) => h.namespace === host.namespace && h.name === host.name);
      const login = user ?? found?.sshUser ?? 'root';
      const given = hostKey ? { hostKey } : {};
      return found?.sshSecret
        ? [{ label, address: ip, user: login, sshSecret: found.sshSecret, ...given }]
        : [];
    });
    // A key handed out by a 0.x run was not always recorded (carried state has none): the Secret's key is
    // all there is.
    const keys = provisioner.installerKeys;
    const recorded = keys.length > 0;
    await installerKey.revokeInstallerKey({
      namespace: ref.namespace,
      keySecret: installerKeySecretName(provisioner.cluster),
      hosts,
      ...(recorded ? { publicKeys: keys } : {}),
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    await provisioner.report.event('Warning', 'InstallerKeyNotRemoved', innermostMessage(err));
  }
}

/**
 * Locks the hosts it holds against deletion, and its spec (`operations`) while `running` says
 * why. A Lock that cannot be written never stops the work: it protects, it does not gate.
 */
export async function lock(
  provisioner: Provisioner,
  running?: string,
  operations: LockTarget['operations'] = ['UPDATE'],
): Promise<void> {
  const { ref, cluster, consumer } = provisioner;
  const wanted: LockTarget[] = provisioner.held.map(({ host, label }) => ({
    ...host,
    resource: BAREMETALHOST_API.plural,
    apiGroup: BAREMETALHOST_API.group,
    operations: ['DELETE'],
    reason: `node ${label} of cluster ${cluster} (Provisioning ${consumer}): remove it from the Provisioning first`,
  }));
  if (running) {
    wanted.push({
      namespace: ref.namespace,
      name: ref.name,
      resource: PROVISIONING_API.plural,
      apiGroup: PROVISIONING_API.group,
      operations,
      reason: running,
    });
  }
  for (const target of wanted) provisioner.lockedIn.add(target.namespace);
  await takeLocks(wanted, {
    alsoIn: provisioner.lockedInSorted(),
    onNotLocked: (err) => {
      if (isCancellation(err)) throw err;
      log.warn('cannot write Locks; going on without them', { error: innermostMessage(err) });
    },
  });
}
