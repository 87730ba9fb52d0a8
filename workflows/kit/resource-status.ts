// How a workflow tells people where its resource is: the resource's status with its Conditions,
// its Events, the UI's current details, and the search attributes operators find it by (Phase,
// and the cluster it is about). The Condition shape and its transition-time rule are
// shared/conditions.ts's; this stamps them with the workflow's time. Each family keeps its own
// words: it says which phase, conditions and Events, and which adapter writes them.
import { log, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { withCondition, type Condition, type ConditionChange } from '../../shared/conditions.js';
import { SA } from '../../shared/search-attributes.js';
import { untilDone } from './retry.js';

/** What a status carries across continue-as-new, as plain JSON. */
export interface ResourceStatusState {
  phase?: string;
  conditions: Condition[];
  /** Events sent, by key, when each is sent once (`eventsOnce`). */
  sent: string[];
}

export const emptyStatus = (): ResourceStatusState => ({ conditions: [], sent: [] });

export interface ResourceEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** Events with the same key are one Event on the resource however often they are sent. */
  dedupKey: string;
}

/** The family's adapter: where its status and Events go. */
export interface StatusTarget {
  /** The resource in words, for logs: "Machine ns/name". */
  where: string;
  writeStatus(status: Record<string, unknown>): Promise<void>;
  recordEvent(event: ResourceEvent): Promise<void>;
}

export interface ResourceStatusOptions {
  /** A status write that keeps failing: waited out on timers, or thrown. */
  failedWrite: 'wait-out' | 'throw';
  /** An Event that cannot be recorded: waited out, thrown, or logged and let go. */
  failedEvent: 'wait-out' | 'throw' | 'log';
  /** A status equal to the last one written is not written again. */
  skipUnchanged?: boolean;
  /** Each Event key is sent once for the life of the state (a repeated step does not repeat it). */
  eventsOnce?: boolean;
  /** The order conditions are written in (by type, when not given). */
  order?: (a: Condition, b: Condition) => number;
}

const byType = (a: Condition, b: Condition) => a.type.localeCompare(b.type);

export class ResourceStatus {
  /** The last status written, as JSON. */
  private written = '';
  private clusterName: string | undefined;

  constructor(
    private readonly target: StatusTarget,
    private readonly options: ResourceStatusOptions,
    readonly state: ResourceStatusState = emptyStatus(),
  ) {}

  get phase(): string | undefined {
    return this.state.phase;
  }

  /** Every condition set so far, in the family's order. */
  get conditions(): Condition[] {
    return this.state.conditions;
  }

  /** Sets one condition; its transition time moves only when its status does. */
  condition(change: ConditionChange): Condition {
    const now = new Date().toISOString();
    this.state.conditions = withCondition(this.state.conditions, change, now).sort(
      this.options.order ?? byType,
    );
    return this.state.conditions.find((c) => c.type === change.type)!;
  }

  /** Records the phase; the Phase search attribute follows it. True when the phase moved. */
  enter(phase: string): boolean {
    if (phase === this.state.phase) return false;
    this.state.phase = phase;
    upsertSearchAttributes([{ key: SA.phase, value: phase }]);
    return true;
  }

  /** The cluster the workflow is about, where operators search for it (once per value). */
  about(key: 'clusterName', value: string | undefined): void {
    if (!value || this.clusterName === value) return;
    this.clusterName = value;
    upsertSearchAttributes([{ key: SA[key], value }]);
  }

  /**
   * Shows `details` in the UI and writes `status`; its `conditions`, if any, are set first and
   * written stamped. False when the status was the one written last and was skipped.
   */
  async publish(
    details: string,
    status: Record<string, unknown> & { conditions?: ConditionChange[] | Condition[] },
  ): Promise<boolean> {
    setCurrentDetails(details);
    const written = status.conditions
      ? {
          ...status,
          conditions: status.conditions.map((c) => this.condition(stripped(c))),
        }
      : status;
    const text = JSON.stringify(written);
    if (this.options.skipUnchanged && text === this.written) return false;
    this.written = text;
    const write = () => this.target.writeStatus(written);
    if (this.options.failedWrite === 'throw') await write();
    else await this.waitOut('write its status', write);
    return true;
  }

  async event(event: ResourceEvent): Promise<void> {
    if (this.options.eventsOnce) {
      if (this.state.sent.includes(event.dedupKey)) return;
      this.state.sent.push(event.dedupKey);
    }
    const record = () => this.target.recordEvent(event);
    switch (this.options.failedEvent) {
      case 'throw':
        return record();
      case 'wait-out':
        return this.waitOut('record an Event', record);
      case 'log':
        try {
          await record();
        } catch (err) {
          log.warn(`${this.target.where}: could not record an Event`, {
            reason: event.reason,
            error: String(err),
          });
        }
    }
  }

  private async waitOut(what: string, call: () => Promise<void>): Promise<void> {
    await untilDone(call, {
      what,
      evenFinal: true,
      report: ({ cause, attempt }) =>
        log.warn(`${this.target.where}: cannot ${what}, try ${attempt}`, { cause }),
    });
  }
}

/** A condition as set, without a transition time it may carry from an earlier write. */
function stripped(c: ConditionChange | Condition): ConditionChange {
  const change: Partial<Condition> = { ...c };
  delete change.lastTransitionTime;
  return change as ConditionChange;
}
