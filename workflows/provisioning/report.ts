// How a Provisioning workflow tells people where it is, in its own words: the phase and step,
// the Ready condition for the generation being handled, Events deduplicated per spec generation
// and try; the kit's resource status writes them and keeps the Phase and ClusterName search
// attributes. Also the last ClusterOperation run on its cluster, written once as it ends. The
// one writer of a Provisioning's status.
import type { ConditionChange } from '../../shared/conditions.js';
import type { ClusterOperationOutcome } from '../../shared/contracts/cluster-operation.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { provisioningApi } from './activity-proxies.js';
import { ResourceStatus, emptyStatus, type ResourceStatusState } from '../kit/resource-status.js';

export interface ReportContext {
  cluster: string;
  /** The spec generation being handled: observedGeneration. */
  generation: number;
  /** Events with the same scope and reason are one Event, however often they are sent. */
  eventScope: string;
}

export class ProvisioningReport {
  readonly consumer: string;
  private readonly status: ResourceStatus;

  /** A status write or Event that keeps failing is retried on timers, never fails the run. */
  constructor(
    private readonly ref: ProvisioningRef,
    private readonly context: () => ReportContext,
    state: ResourceStatusState = emptyStatus(),
  ) {
    this.consumer = `${ref.namespace}/${ref.name}`;
    this.status = new ResourceStatus(
      {
        where: this.consumer,
        writeStatus: (status) => provisioningApi.writeProvisioningStatus({ ref, status }),
        recordEvent: (event) => provisioningApi.recordProvisioningEvent({ ref, ...event }),
      },
      {
        failedWrite: 'wait-out',
        failedEvent: 'wait-out',
      },
      state,
    );
  }

  /** What the status carries into the next run: its conditions' transition times. */
  get state(): ResourceStatusState {
    return this.status.state;
  }

  async step(phase: string, what: string, extra: Record<string, unknown> = {}): Promise<void> {
    const { cluster } = this.context();
    this.status.enter(phase);
    this.status.about('clusterName', cluster);
    await this.status.publish(
      `**${this.consumer}** (cluster ${cluster || '?'}): ${phase}. ${what}`,
      {
        phase,
        step: what,
        ...extra,
      },
    );
  }

  async event(type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const dedupKey = `${this.context().eventScope}/${reason}`;
    await this.status.event({ type, reason, message, dedupKey });
  }

  /** The Ready condition, for the generation being handled (stamped when written). */
  ready(
    status: 'True' | 'False',
    reason: string,
    message: string,
  ): { conditions: ConditionChange[]; observedGeneration: number } {
    const { generation } = this.context();
    return {
      conditions: [{ type: 'Ready', status, reason, message, observedGeneration: generation }],
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

  /**
   * The last ClusterOperation run on the cluster, and the version an upgrade set: written once, as
   * it ends, beside the phase and conditions (none of which it changes).
   */
  async lastOperation(
    operation: { name: string; action: string | undefined },
    outcome: ClusterOperationOutcome,
    versions: { before: string | undefined; now: string | undefined },
  ): Promise<void> {
    await provisioningApi.writeProvisioningStatus({
      ref: this.ref,
      status: {
        lastOperation: {
          name: operation.name,
          action: operation.action,
          phase: outcome.phase,
          message: outcome.message,
          ...(outcome.kubeVersion
            ? {
                kubeVersionBefore: versions.before ?? 'as installed',
                kubeVersionAfter: outcome.kubeVersion,
              }
            : {}),
        },
        ...(versions.now ? { kubeVersion: versions.now } : {}),
      },
    });
  }
}
