// How a Software or BPA Cluster workflow tells people where it is: the UI's current details, the
// resource's status and Events. A status write that keeps failing is waited out on timers.
import { log, setCurrentDetails } from '@temporalio/workflow';
import type { BpaRef } from '../../activities/kubernetes/bpa-resources.js';
import { bpaKube } from '../activities.js';
import { untilDone } from '../kit/retry.js';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

export class ResourceReport {
  readonly where: string;
  /** The last status written: the same one is not written again. */
  private written = '';
  /** When each condition last changed status: lastTransitionTime moves only then. */
  private readonly transitions = new Map<string, { status: string; at: string }>();

  constructor(readonly ref: BpaRef) {
    this.where = `${ref.kind} ${ref.namespace}/${ref.name}`;
  }

  /** Writes `status` (conditions stamped with now) unless it is what was written last. */
  async status(
    details: string,
    status: Record<string, unknown> & { conditions?: Condition[] },
  ): Promise<boolean> {
    setCurrentDetails(`**${this.where}**: ${details}`);
    const text = JSON.stringify(status);
    if (text === this.written) return false;
    this.written = text;
    const now = new Date().toISOString();
    const stamp = (c: Condition) => {
      const last = this.transitions.get(c.type);
      if (last?.status !== c.status) this.transitions.set(c.type, { status: c.status, at: now });
      return { ...c, lastTransitionTime: this.transitions.get(c.type)!.at };
    };
    const stamped = {
      ...status,
      ...(status.conditions ? { conditions: status.conditions.map(stamp) } : {}),
    };
    await this.call('write its status', () =>
      bpaKube.writeBpaStatus({ ref: this.ref, status: stamped }),
    );
    return true;
  }

  /** `scope`: Events with the same scope and reason are one Event however often they are sent. */
  async event(
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    scope: string,
  ): Promise<void> {
    await this.call('record an Event', () =>
      bpaKube.recordBpaEvent({
        ref: this.ref,
        type,
        reason,
        message,
        dedupKey: `${scope}/${reason}`,
      }),
    );
  }

  private async call(what: string, write: () => Promise<void>): Promise<void> {
    await untilDone(write, {
      what,
      evenFinal: true,
      report: ({ cause, attempt }) =>
        log.warn(`${this.where}: cannot ${what}, try ${attempt}`, { cause }),
    });
  }
}
