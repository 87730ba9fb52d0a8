// How a ClusterOperation says where it is: its phase, the step it is at, each step's result, and
// where a failure was (step, host, task, log), in its status; Events at its start and end; the
// Phase search attribute and the UI's details through the kit's resource status.
import type { CustomResourceRef } from '../../activities/kubernetes/object-ref.js';
import type { OperationPhase, OperationPlace } from '../../shared/contracts/cluster-operation.js';
import { ResourceStatus } from '../kit/resource-status.js';
import { operationApi } from './activity-proxies.js';
import { placeStatus } from './place.js';

export interface StepReport {
  name: string;
  action: string;
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Skipped' | 'Cancelled';
  startTime?: string;
  completionTime?: string;
  message?: string;
  log?: string;
  /** Tasks done and changed on each host, as ansible's recap counted them. */
  hosts?: Record<string, { ok: number; changed: number }>;
  /** A dry run's: how many tasks would change something, by host. */
  wouldChange?: Record<string, number>;
  /** Hosts of the recap that `hosts` does not list (v2, workflows/cluster-operation/step-hosts.ts). */
  hostsNotShown?: number;
}

export class OperationReport {
  readonly steps: StepReport[] = [];
  private readonly status: ResourceStatus;
  private readonly where: string;

  /**
   * @param cluster the cluster it acts on, as its status names it; an operation that waits for
   * its turn names it once its Provisioning has answered
   */
  constructor(
    ref: CustomResourceRef,
    public cluster: string,
  ) {
    this.where = `ClusterOperation ${ref.namespace}/${ref.name}`;
    this.status = new ResourceStatus(
      {
        where: this.where,
        writeStatus: (status) => operationApi.writeClusterOperationStatus({ ref, status }),
        recordEvent: (event) => operationApi.recordClusterOperationEvent({ ref, ...event }),
      },
      { failedWrite: 'wait-out', failedEvent: 'log' },
    );
  }

  /** Writes the phase, the current step and every step's result, with `extra` fields. */
  async publish(
    phase: OperationPhase,
    currentStep: string,
    message: string,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    this.status.enter(phase);
    await this.status.publish(`**${this.where}** (cluster ${this.cluster}): ${phase}. ${message}`, {
      phase,
      currentStep,
      message,
      steps: this.steps,
      ...extra,
    });
  }

  /** Nothing was run, and why: it has ended. */
  async refused(
    message: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ phase: 'Failed'; message: string }> {
    await this.publish('Failed', '', message, {
      completionTime: new Date().toISOString(),
      ...extra,
    });
    await this.event('Warning', 'Refused', message);
    return { phase: 'Failed', message };
  }

  /** It waits for its turn: its place in line, and why it waits (placeStatus). */
  async waiting(place: OperationPlace): Promise<void> {
    const { message, ...fields } = placeStatus(place);
    await this.publish('Pending', '', message as string, fields);
  }

  async event(type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await this.status.event({ type, reason, message, dedupKey: reason });
  }
}
