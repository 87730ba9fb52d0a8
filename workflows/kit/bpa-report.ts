// Where a Software's or BPA Cluster's status and Events go: the kit's resource status over the
// BPA adapter. Only changes are written; a write that keeps failing is waited out on timers.
import { proxyLocalActivities } from '@temporalio/workflow';
import type { BpaResourceActivities } from '../../activities/kubernetes/bpa-resources.js';
import type { BpaRef } from '../../shared/bpa-api.js';
import type { ConditionChange } from '../../shared/conditions.js';
import { RESOURCE_CALL } from './activity-options.js';
import { ResourceStatus } from './resource-status.js';

/** A Software's and a BPA Cluster's status and Events. */
const bpaApi = proxyLocalActivities<BpaResourceActivities>(RESOURCE_CALL);

/** A BPA resource's condition always says why, in its reason and message. */
export type Condition = ConditionChange & { reason: string; message: string };

/** A BPA resource's status; `scope` keys its Events: the same scope and reason are one Event. */
export class BpaStatus extends ResourceStatus {
  readonly where: string;

  constructor(readonly ref: BpaRef) {
    const where = `${ref.kind} ${ref.namespace}/${ref.name}`;
    super(
      {
        where,
        writeStatus: (status) => bpaApi.writeBpaStatus({ ref, status }),
        recordEvent: (event) => bpaApi.recordBpaEvent({ ref, ...event }),
      },
      {
        failedWrite: 'wait-out',
        failedEvent: 'wait-out',
        skipUnchanged: true,
      },
    );
    this.where = where;
  }

  /** Writes `status` (its phase also where operators search) unless it is what was written last. */
  async status(
    details: string,
    status: Record<string, unknown> & { phase: string },
  ): Promise<boolean> {
    this.enter(status.phase);
    return this.publish(`**${this.where}**: ${details}`, status);
  }

  async scopedEvent(
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    scope: string,
  ): Promise<void> {
    await this.event({ type, reason, message, dedupKey: `${scope}/${reason}` });
  }
}
