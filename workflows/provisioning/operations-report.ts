// What a Provisioning's line of ClusterOperations says on them in runs from before v19
// (workflows/provisioning/operations.ts), where the operations' own workflows do not: a queued operation's place and what
// it waits for; one refused, dropped, or whose workflow ended without an outcome. Each is written
// once, as it happens: none has conditions or a phase to search by, so the kit's resource status
// is not between. The last operation on the Provisioning itself is its own report's (report.ts).
import type { ClusterOperationObservation } from '../../shared/contracts/cluster-operation.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { operationApi, operationStatusCalls } from '../cluster-operation/activity-proxies.js';
import { placeStatus } from '../cluster-operation/place.js';
import type { OperationWait } from './operation-wait.js';

export class OperationsReport {
  /**
   * @param toldApart (v18) a queued or refused operation is told beside the Provisioning's main
   * loop, through activities whose results are history events, not local ones
   */
  constructor(
    private readonly provisioning: ProvisioningRef,
    private readonly toldApart = false,
  ) {}

  /** Where a queued or refused operation's status and Event go. */
  private get lineCalls() {
    return this.toldApart ? operationStatusCalls : operationApi;
  }

  /** A refused operation's status and Event: it has ended, nothing run. */
  async refused(seen: ClusterOperationObservation, why: string): Promise<void> {
    const ref = this.operationRef(seen);
    const message = `Nothing was run: ${why}`;
    await this.lineCalls.writeClusterOperationStatus({
      ref,
      status: {
        phase: 'Failed',
        message,
        completionTime: new Date().toISOString(),
        queuePosition: null,
        notBefore: null,
      },
    });
    await this.lineCalls.recordClusterOperationEvent({
      ref,
      type: 'Warning',
      reason: 'Refused',
      message,
      dedupKey: `Refused/${seen.retry ?? ''}`,
    });
  }

  /**
   * A queued operation's place in line (`ahead` of it, behind the one `running` if named), and
   * what it waits for: its turn on `waitsFor`, or why even the first in line cannot start yet.
   */
  async queued(
    seen: ClusterOperationObservation,
    place: { ahead: number; running: string; waitsFor: string; wait: OperationWait | undefined },
  ): Promise<void> {
    await this.lineCalls.writeClusterOperationStatus({
      ref: this.operationRef(seen),
      status: { phase: 'Pending', ...placeStatus(place) },
    });
  }

  /** An operation that failed outside its own workflow: dropped from the line, or orphaned. */
  async failed(seen: ClusterOperationObservation, message: string): Promise<void> {
    await operationApi.writeClusterOperationStatus({
      ref: this.operationRef(seen),
      status: { phase: 'Failed', message },
    });
  }

  private operationRef(seen: ClusterOperationObservation) {
    return { namespace: this.provisioning.namespace, name: seen.name, uid: seen.uid };
  }
}
