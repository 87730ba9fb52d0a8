// How a Provisioning workflow tells people where it is: the UI's current details, the resource's
// status (phase, step, the Ready condition) and Events, deduplicated per spec generation and try.
import { log, setCurrentDetails } from '@temporalio/workflow';
import type { ProvisioningRef } from '../../activities/kubernetes/provisionings.js';
import { provisioningKube as kube } from '../activities.js';
import { untilDone } from '../kit/retry.js';

export interface ReportContext {
  cluster: string;
  /** The spec generation being handled: observedGeneration. */
  generation: number;
  /** Events with the same scope and reason are one Event, however often they are sent. */
  eventScope: string;
}

export class ProvisioningReport {
  readonly consumer: string;

  /** `waitOut`: a status write that keeps failing is retried on timers, never fails the run. */
  constructor(
    private readonly ref: ProvisioningRef,
    private readonly context: () => ReportContext,
    private readonly waitOut = false,
  ) {
    this.consumer = `${ref.namespace}/${ref.name}`;
  }

  async step(phase: string, what: string, extra: Record<string, unknown> = {}): Promise<void> {
    const { cluster } = this.context();
    setCurrentDetails(`**${this.consumer}** (cluster ${cluster || '?'}): ${phase}. ${what}`);
    await this.call('write its status', () =>
      kube.writeProvisioningStatus({ ref: this.ref, status: { phase, step: what, ...extra } }),
    );
  }

  async event(type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await this.call('record an Event', () =>
      kube.recordProvisioningEvent({
        ref: this.ref,
        type,
        reason,
        message,
        dedupKey: `${this.context().eventScope}/${reason}`,
      }),
    );
  }

  /** The Ready condition, for the generation being handled. */
  ready(status: 'True' | 'False', reason: string, message: string) {
    const { generation } = this.context();
    return {
      conditions: [
        {
          type: 'Ready',
          status,
          reason,
          message,
          observedGeneration: generation,
          lastTransitionTime: new Date().toISOString(),
        },
      ],
      observedGeneration: generation,
    };
  }

  /** What can never work: said in the status and an Event; nothing was run. */
  async refuse(problems: string[]): Promise<void> {
    const message = problems.join('; ');
    await this.step(
      'Refused',
      'Nothing was run: fix the resource',
      this.ready('False', 'Refused', message),
    );
    await this.event('Warning', 'Refused', message);
  }

  private async call(what: string, write: () => Promise<void>): Promise<void> {
    if (!this.waitOut) return write();
    await untilDone(write, {
      what,
      evenFinal: true,
      report: ({ cause, attempt }) =>
        log.warn(`${this.consumer}: cannot ${what}, try ${attempt}`, { cause }),
    });
  }
}

/** The host, task and log of a failed kubespray run, from its PlaybookFailed details. */
export function failureDetails(err: unknown): Record<string, string> {
  let cause: unknown = err;
  while (cause && typeof cause === 'object') {
    const details = (cause as { details?: unknown[] }).details?.[0];
    if (details && typeof details === 'object') {
      const {
        failedHost,
        failedTask,
        log: logFile,
      } = details as Record<string, string | undefined>;
      return Object.fromEntries(
        Object.entries({ failedHost, failedTask, log: logFile }).filter(([, v]) => v !== undefined),
      ) as Record<string, string>;
    }
    cause = (cause as { cause?: unknown }).cause;
  }
  return {};
}
