// A BPA Cluster's status from its members' phases: the Provisioning first, then the Software.
import type { BpaClusterObservation } from '../../shared/contracts/bpa-cluster.js';
import type { Condition } from '../kit/bpa-report.js';

export interface ClusterStatus {
  phase: string;
  provisioning: string;
  software: string;
  observedGeneration: number;
  conditions: Condition[];
}

/** Phases in which a member is done: a Provisioning's cluster runs, a Software is installed. */
const DONE = { provisioning: 'Ready', software: 'Installed' } as const;

export function aggregate(seen: BpaClusterObservation): ClusterStatus {
  const { provisioningCR, softwareCR } = seen.spec;
  const member = (kind: 'provisioning' | 'software', named: string | undefined): Condition => {
    const type = kind === 'provisioning' ? 'ProvisioningReady' : 'SoftwareReady';
    if (!named) {
      return kind === 'provisioning'
        ? { type, status: 'False', reason: 'NotNamed', message: 'spec.provisioningCR is empty' }
        : { type, status: 'True', reason: 'NotNamed', message: 'no Software is named' };
    }
    const found = seen[kind];
    if (!found) {
      return {
        type,
        status: 'False',
        reason: 'NotFound',
        message: `${named} does not exist (yet)`,
      };
    }
    const phase = found.phase ?? 'Pending';
    return {
      type,
      status: phase === DONE[kind] ? 'True' : 'False',
      reason: phase,
      message: `${named} is ${phase}`,
    };
  };
  const provisioning = member('provisioning', provisioningCR);
  const software = member('software', softwareCR);
  const waitingOn = [provisioning, software].find((c) => c.status !== 'True');
  const phase = seen.deleting
    ? 'Deleting'
    : !waitingOn
      ? 'Ready'
      : waitingOn.reason === 'NotFound' || waitingOn.reason === 'NotNamed'
        ? `Waiting`
        : waitingOn.reason;
  const ready: Condition = waitingOn
    ? { type: 'Ready', status: 'False', reason: waitingOn.type, message: waitingOn.message }
    : {
        type: 'Ready',
        status: 'True',
        reason: 'Ready',
        message: `cluster installed${softwareCR ? ' and its software too' : ''}`,
      };
  return {
    phase,
    provisioning: seen.provisioning?.phase ?? (provisioningCR ? 'Missing' : 'None'),
    software: seen.software?.phase ?? (softwareCR ? 'Missing' : 'None'),
    observedGeneration: seen.generation,
    conditions: [ready, provisioning, software],
  };
}
