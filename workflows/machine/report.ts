// What a Machine workflow tells people: the Machine's status (phase, the v1beta1 conditions with
// their transition times, lastUpdated when the phase moves), its Events, the search attributes
// operators find it by, and the UI's current details. Writes that keep failing are waited out.
import { log, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { MachineRef } from '../../activities/kubernetes/machines.js';
import {
  CONDITION,
  type MachineCondition,
  type MachineFailureReason,
  type MachinePhase,
  type MachineStatus,
} from '../../shared/machine-api.js';
import { SA } from '../../shared/search-attributes.js';
import { machineKube as kube } from '../activities.js';
import { untilDone } from '../kit/retry.js';

/** The report's state, carried across continue-as-new as plain JSON. */
export interface MachineReportState {
  phase?: MachinePhase;
  lastUpdated?: string;
  conditions: MachineCondition[];
  failure?: { reason: MachineFailureReason; message: string };
  /** Events sent, by key: each is sent once. */
  sent: string[];
}

export const emptyReport = (): MachineReportState => ({ conditions: [], sent: [] });

const now = () => new Date().toISOString();

export class MachineReport {
  constructor(
    private readonly ref: MachineRef,
    readonly state: MachineReportState,
  ) {}

  get phase(): MachinePhase | undefined {
    return this.state.phase;
  }

  /** Sets a condition; its transition time moves only when its status does. */
  condition(
    type: string,
    status: MachineCondition['status'],
    reason?: string,
    message?: string,
  ): void {
    const before = this.state.conditions.find((c) => c.type === type);
    const severity = status === 'False' ? { severity: 'Info' as const } : {};
    const next: MachineCondition = {
      type,
      status,
      ...severity,
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
      lastTransitionTime:
        before && before.status === status ? (before.lastTransitionTime ?? now()) : now(),
    };
    this.state.conditions = [...this.state.conditions.filter((c) => c.type !== type), next].sort(
      (a, b) =>
        a.type === CONDITION.ready
          ? -1
          : b.type === CONDITION.ready
            ? 1
            : a.type.localeCompare(b.type),
    );
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
    if (phase !== this.state.phase) {
      this.state.phase = phase;
      this.state.lastUpdated = now();
      upsertSearchAttributes([{ key: SA.phase, value: phase }]);
    }
    setCurrentDetails(`**Machine ${this.ref.namespace}/${this.ref.name}** (${phase}): ${details}`);
    const failure = this.state.failure;
    const status: Record<string, unknown> = {
      phase: failure && phase !== 'Deleting' && phase !== 'Deleted' ? 'Failed' : phase,
      lastUpdated: this.state.lastUpdated,
      conditions: this.state.conditions,
      failureReason: failure?.reason ?? null,
      failureMessage: failure?.message ?? null,
      ...extra,
    };
    await this.write('write its status', () => kube.writeMachineStatus({ ref: this.ref, status }));
  }

  /** One Event per key, ever: a replayed or repeated step does not repeat it. */
  async event(
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    key = reason,
  ): Promise<void> {
    if (this.state.sent.includes(key)) return;
    this.state.sent.push(key);
    try {
      await kube.recordMachineEvent({ ref: this.ref, type, reason, message, dedupKey: key });
    } catch (err) {
      log.warn('could not record an Event', { reason, error: String(err) });
    }
  }

  private async write(what: string, call: () => Promise<void>): Promise<void> {
    await untilDone(call, {
      what,
      evenFinal: true,
      report: ({ cause, attempt }) =>
        log.warn(`Machine ${this.ref.namespace}/${this.ref.name}: cannot ${what}, try ${attempt}`, {
          cause,
        }),
    });
  }
}
