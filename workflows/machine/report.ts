// What a HostflowMachine workflow tells people, by Cluster API's v1beta2 InfraMachine contract:
// `status.initialization.provisioned`, the addresses and failure domain, and the Ready and Paused
// conditions (metav1 conditions: a reason always), which Cluster API core mirrors onto the Machine
// and a MachineHealthCheck can act on. The kit's resource status writes them, sends each Event
// once, and keeps the Phase search attribute (hostflow's own word for where it is; not written).
import type { Condition, ConditionStatus } from '../../shared/conditions.js';
import type { MachineRef } from '../../shared/contracts/machine.js';
import { CONDITION, type HostflowMachineStatus } from '../../shared/machine-api.js';
import { machineApi } from './activity-proxies.js';
import { ResourceStatus, type ResourceStatusState } from '../kit/resource-status.js';

export type MachinePhase = 'Pending' | 'Provisioning' | 'Provisioned' | 'Failed' | 'Deleting';

/** The report's state, carried across continue-as-new as plain JSON. */
export interface MachineReportState extends ResourceStatusState {
  /** What was written besides the conditions, kept so that each write carries all of it. */
  fields?: Omit<HostflowMachineStatus, 'conditions'>;
}

export const emptyReport = (): MachineReportState => ({ conditions: [], sent: [] });

const readyFirst = (a: Condition, b: Condition) =>
  a.type === CONDITION.ready ? -1 : b.type === CONDITION.ready ? 1 : a.type.localeCompare(b.type);

export class MachineReport {
  private readonly status: ResourceStatus;

  constructor(
    private readonly ref: MachineRef,
    readonly state: MachineReportState,
    private readonly generation: () => number,
  ) {
    this.status = new ResourceStatus(
      {
        where: `HostflowMachine ${ref.namespace}/${ref.name}`,
        writeStatus: (status) => machineApi.writeHostflowMachineStatus({ ref, status }),
        recordEvent: (event) => machineApi.recordHostflowMachineEvent({ ref, ...event }),
      },
      {
        failedWrite: 'wait-out',
        failedEvent: 'log',
        eventsOnce: true,
        skipUnchanged: true,
        order: readyFirst,
      },
      state,
    );
  }

  get phase(): MachinePhase | undefined {
    return this.state.phase as MachinePhase | undefined;
  }

  /** Sets a condition (a reason always); its transition time moves only when its status does. */
  condition(type: string, status: ConditionStatus, reason: string, message?: string): void {
    this.status.condition({
      type,
      status,
      reason,
      observedGeneration: this.generation(),
      ...(message ? { message } : {}),
    });
  }

  /** The cluster it is about, where operators search for it. */
  about(clusterName: string): void {
    this.status.about('clusterName', clusterName);
  }

  /** Records `phase`, merges `fields` into what the status says, and writes it all. */
  async publish(
    phase: MachinePhase,
    details: string,
    fields: Omit<HostflowMachineStatus, 'conditions'> = {},
  ): Promise<void> {
    this.status.enter(phase);
    this.state.fields = { ...this.state.fields, ...fields };
    await this.status.publish(
      `**HostflowMachine ${this.ref.namespace}/${this.ref.name}** (${phase}): ${details}`,
      { ...this.state.fields, conditions: this.state.conditions },
    );
  }

  /** One Event per key, ever: a replayed or repeated step does not repeat it. */
  async event(
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    key = reason,
  ): Promise<void> {
    await this.status.event({ type, reason, message, dedupKey: key });
  }
}
