// What a Provisioning says on its own about what it does without being asked: hosts it took
// once they were freed. Each is a patch of the Provisioning workflow (provisioner.ts), since
// runs recorded before it said nothing.
import type { HostNamespaces } from '../../shared/bpa-api.js';
import type { Plan } from './plans.js';
import type { ProvisioningReport } from './report.js';
import { searchedWhere } from './roles.js';

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
