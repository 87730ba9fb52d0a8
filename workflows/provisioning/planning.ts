// Planning a spec: which BareMetalHosts play which role (roles.ts), at which addresses
// (nodes.ts), and the steps from the cluster as it is to the one asked for (plans.ts); or why
// there can be none, said before anything runs. A plan's hosts are claimed as it is made, and the
// hosts an earlier try held that it no longer needs are let go.
import { isCancellation } from '@temporalio/workflow';
import type { ProvisioningObservation } from '../../shared/contracts/provisioning.js';
import {
  VIRTLET_CLUSTER_TYPE,
  type HostInventory,
  type HostNamespaces,
} from '../../shared/bpa-api.js';
import { innermostMessage } from '../../shared/failures.js';
import { kubesprayCheck, provisioningApi } from './activity-proxies.js';
import { release, revokeInstallerKey } from './host-hold.js';
import { nodeAddresses } from './nodes.js';
import { sayVirtletIgnored } from './notices.js';
import { planInstall, planScale, unionNodes, withoutNodes, type Plan } from './plans.js';
import type { Provisioner } from './provisioner.js';
import { assignRoles } from './roles.js';

/** The steps from the cluster as it is to the one `seen` asks for; or why there are none. */
export async function planFor(
  provisioner: Provisioner,
  seen: ProvisioningObservation,
): Promise<Plan | 'refused' | 'gone'> {
  const { ref, report } = provisioner;
  const label = seen.cluster ?? '';
  if (!provisioner.installed) provisioner.cluster = label;
  if (!(await provisioningApi.addProvisioningFinalizer(ref))) return 'gone';
  if (!provisioner.installed)
    await report.step('Assigning', 'Assign roles from the BareMetalHosts');
  if (seen.clusterType === VIRTLET_CLUSTER_TYPE) {
    await sayVirtletIgnored(report);
  }
  if (!label) {
    return refuse(provisioner, ['the label `cluster` is missing: it names the cluster to build']);
  }
  const pinned = seen.spec.kubesprayRelease;
  const check = await kubesprayCheck.checkKubespray(pinned ? { release: pinned } : {});
  if (check.problem) return refuse(provisioner, [check.problem]);
  const { hosts, searched } = await listHosts(provisioner);
  const current = provisioner.installed?.nodes ?? provisioner.held;
  const assignment = assignRoles(seen.spec, provisioner.consumer, hosts, current, searched);
  if (!assignment.ok) return refuse(provisioner, assignment.problems, assignment.busy);
  const found = await nodeAddresses(assignment.nodes, hosts, seen.ipSource);
  if ('problems' in found) return refuse(provisioner, found.problems);
  let plan: Plan;
  if (provisioner.installed) {
    const scale = planScale(provisioner.installed, { cluster: label, ...found, spec: seen.spec });
    if ('problems' in scale) return refuse(provisioner, scale.problems);
    plan = scale.plan;
  } else {
    const dropped = withoutNodes(provisioner.touched, found.nodes);
    plan = planInstall(found.nodes, found.keyHosts, seen.spec, dropped);
  }
  try {
    await provisioningApi.claimBareMetalHosts({
      consumer: ref,
      hosts: plan.nodes.map((n) => n.host),
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    // Taken by another Provisioning meanwhile.
    return refuse(provisioner, [innermostMessage(err)], true);
  }
  const before = provisioner.held;
  provisioner.held = unionNodes(provisioner.installed?.nodes ?? provisioner.touched, plan.nodes);
  // Hosts of an earlier try that nothing ran on (their key step may have).
  await revokeInstallerKey(provisioner, withoutNodes(before, provisioner.held));
  await release(provisioner);
  return plan;
}

/** The hosts it may use, and where they were looked for. */
async function listHosts(
  provisioner: Provisioner,
): Promise<{ hosts: HostInventory[]; searched: HostNamespaces }> {
  const found = await provisioningApi.searchBareMetalHosts({ consumer: { ...provisioner.ref } });
  provisioner.searched = found.searched;
  return found;
}

/** `busy`: only hosts that are not free now stand in the way (see `waitsForHost`). */
async function refuse(
  provisioner: Provisioner,
  problems: string[],
  busy = false,
): Promise<'refused'> {
  const { report } = provisioner;
  provisioner.waitsForHost = busy;
  if (!provisioner.installed) {
    await report.refuse(problems);
    return 'refused';
  }
  const message = `${problems.join('; ')}; the cluster runs as last installed`;
  await report.step('Ready', 'The change was refused: fix the resource', {
    ...report.ready('True', 'ChangeRefused', message),
  });
  await report.event('Warning', 'Refused', message);
  return 'refused';
}
