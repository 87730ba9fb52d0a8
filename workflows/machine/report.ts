// What a Machine workflow tells people, in Cluster API's words: the phase (Failed while a failure
// stands), the v1beta1 conditions (Ready first, a False one of severity Info), lastUpdated when
// the phase moves, failureReason and failureMessage. The kit's resource status writes them, sends
// each Event once, and keeps the Phase search attribute. Its HostflowMachine's status too.
import type { Condition, ConditionStatus } from '../../shared/conditions.js';
import type { MachineRef } from '../../shared/contracts/machine.js';
import {
  CONDITION,
  type MachineFailureReason,
  type MachinePhase,
  type MachineStatus,
} from '../../shared/machine-api.js';
import { machineApi } from './activity-proxies.js';
import { ResourceStatus, type ResourceStatusState } from '../kit/resource-status.js';

/** The report's state, carried across continue-as-new as plain JSON. */
export interface MachineReportState extends ResourceStatusState {
  phase?: MachinePhase;
  lastUpdated?: string;
  failure?: { reason: MachineFailureReason; message: string };
}

export const emptyReport = (): MachineReportState => ({ conditions: [], sent: [] });

const readyFirst = (a: Condition, b: Condition) =>
  a.type === CONDITION.ready ? -1 : b.type === CONDITION.ready ? 1 : a.type.localeCompare(b.type);

export class MachineReport {
  private readonly status: ResourceStatus;

  constructor(
    private readonly ref: MachineRef,
    readonly state: MachineReportState,
  ) {
    this.status = new ResourceStatus(
      {
        where: `Machine ${ref.namespace}/${ref.name}`,
        writeStatus: (status) => machineApi.writeMachineStatus({ ref, status }),
        recordEvent: (event) => machineApi.recordMachineEvent({ ref, ...event }),
      },
      {
        failedWrite: 'wait-out',
        failedEvent: 'log',
        eventsOnce: true,
        phaseAttribute: 'always',
        order: readyFirst,
      },
      state,
    );
  }

  get phase(): MachinePhase | undefined {
    return this.state.phase;
  }

  /** Sets a condition; its transition time moves only when its status does. */
  condition(type: string, status: ConditionStatus, reason?: string, message?: string): void {
    this.status.condition({
      type,
      status,
      ...(status === 'False' ? { severity: 'Info' as const } : {}),
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
    });
  }

  /** The HostflowMachine `name`'s status: ready, and what was made (providerID, addresses). */
  async infrastructureReady(name: string, status: Record<string, unknown>): Promise<void> {
    await machineApi.writeInfrastructureStatus({ namespace: this.ref.namespace, name, status });
  }

  fail(reason: MachineFailureReason, message: string): void {
    this.state.failure = { reason, message };
  }

  /** Writes phase, conditions and `extra` to the Machine; the phase also where operators search. */
  async publish(
    phase: MachinePhase,
    details: string,
    extra: Partial<MachineStatus> = {},
  ): Promise<void> {
    if (this.status.enter(phase)) this.state.lastUpdated = new Date().toISOString();
    const failure = this.state.failure;
    await this.status.publish(
      `**Machine ${this.ref.namespace}/${this.ref.name}** (${phase}): ${details}`,
      {
        phase: failure && phase !== 'Deleting' && phase !== 'Deleted' ? 'Failed' : phase,
        lastUpdated: this.state.lastUpdated,
        conditions: this.state.conditions,
        failureReason: failure?.reason ?? null,
        failureMessage: failure?.message ?? null,
        ...extra,
      },
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
