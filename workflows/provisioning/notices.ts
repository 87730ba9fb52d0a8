// What a Provisioning says on its own about what it does without being asked: a label of the
// original that it does not act on, and hosts it took once they were freed.
import type { HostNamespaces } from '../../shared/bpa-api.js';
import { CLUSTER_TYPE_LABEL, VIRTLET_CLUSTER_TYPE } from '../../shared/bpa-api.js';
import type { Plan } from './plans.js';
import type { ProvisioningReport } from './report.js';
import { searchedWhere } from './roles.js';

/** The original took virtlet VM pods as hosts for this label; hostflow only BareMetalHosts. */
export function sayVirtletIgnored(report: ProvisioningReport): Promise<void> {
  return report.event(
    'Warning',
    'ClusterTypeIgnored',
    `the label ${CLUSTER_TYPE_LABEL}: ${VIRTLET_CLUSTER_TYPE} asks for virtlet VM pods as hosts, ` +
      'which hostflow does not provision: it installs on BareMetalHosts, as for any ' +
      'Provisioning. Remove the label to say so, or delete the Provisioning if VMs were meant',
  );
}

/**
 * A Provisioning that waited for hosts took them once they were freed: an Event says what it
 * looked at and what it took, and the Ready condition no longer shows the refusal while it goes
 * on (True for an installed cluster, which runs on while it scales).
 */
export async function sayHostsFreed(
  report: ProvisioningReport,
  what: {
    plan: Plan;
    cluster: string;
    installed: boolean;
    /** How many times it had looked again before this look. */
    looks: number;
    searched: HostNamespaces | undefined;
  },
): Promise<void> {
  const { plan, cluster, installed, looks, searched } = what;
  const taken = installed
    ? plan.nodes.filter((node) => plan.added.includes(node.label))
    : plan.nodes;
  const took =
    taken
      .map(
        ({ host, roles, label }) =>
          `BareMetalHost ${host.namespace}/${host.name} for ${roles[0]} ${label}`,
      )
      .join(', ') || 'the hosts it waited for';
  const where = searched ? ` of ${searchedWhere(searched)}` : '';
  const message =
    `looked again (look ${looks + 1} since it was refused for hosts that were not free) at the ` +
    `BareMetalHosts${where}: took ${took}; ${installed ? 'scaling' : 'installing'} cluster ${cluster}`;
  await report.step(plan.phase, 'Took the freed hosts', {
    ...report.ready(installed ? 'True' : 'False', 'HostsFreed', message),
  });
  await report.event('Normal', 'HostsFreed', message);
}
