// Kubernetes adapter for ClusterOperation resources: their status and their Events. The
// Provisioning's workflow writes a queued operation's; the operation's own workflow the rest.
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { CLUSTER_OPERATION_API } from '../../shared/cluster-operation-api.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { customRef, type CustomResourceRef } from './object-ref.js';
import { writeObjectStatus } from './object-status.js';

export function createClusterOperationActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  const operation = (ref: CustomResourceRef) =>
    customRef(CLUSTER_OPERATION_API, 'ClusterOperation', ref);
  return {
    /** Merges `status` into the operation's status (its steps replace as a whole). */
    writeClusterOperationStatus: (input: {
      ref: CustomResourceRef;
      status: Record<string, unknown>;
    }) => writeObjectStatus(custom, operation(input.ref), input.status, { tenant: true }),

    recordClusterOperationEvent: ({ ref, ...event }: ObjectEvent & { ref: CustomResourceRef }) =>
      recordObjectEvent(core, operation(ref), event),
  };
}

export type ClusterOperationActivities = ReturnType<typeof createClusterOperationActivities>;
