// Kubernetes adapter for the BPA Software and Cluster resources: their status, their Events,
// the Cluster's finalizer, and deleting the members a deleted Cluster names.
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  BPA_CLUSTER_API,
  BPA_CLUSTER_FINALIZER,
  PROVISIONING_API,
  SOFTWARE_API,
  type BpaRef,
} from '../../shared/bpa-api.js';
import { isNotFound, rethrowKube } from './errors.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { setObjectFinalizer } from './object-finalizers.js';
import { customRef } from './object-ref.js';
import { writeObjectStatus } from './object-status.js';

const API = { Software: SOFTWARE_API, Cluster: BPA_CLUSTER_API, Provisioning: PROVISIONING_API };
const object = (ref: BpaRef) => customRef(API[ref.kind], ref.kind, ref);
const where = (ref: Omit<BpaRef, 'uid'>) => `${ref.kind} ${ref.namespace}/${ref.name}`;

export function createBpaResourceActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  return {
    /** Sets the Cluster finalizer; false when the resource (this uid) is gone. */
    addClusterFinalizer: (ref: BpaRef) =>
      setObjectFinalizer(custom, object(ref), BPA_CLUSTER_FINALIZER, true),
    removeClusterFinalizer: async (ref: BpaRef) =>
      void (await setObjectFinalizer(custom, object(ref), BPA_CLUSTER_FINALIZER, false)),

    /** Merges `status` into the resource's status (lists and conditions replace as a whole). */
    writeBpaStatus: (input: { ref: BpaRef; status: Record<string, unknown> }) =>
      writeObjectStatus(custom, object(input.ref), input.status),

    recordBpaEvent: ({ ref, ...event }: ObjectEvent & { ref: BpaRef }) =>
      recordObjectEvent(core, object(ref), event),

    /** Deletes a resource a deleted Cluster named (its own finalizer then does its clean-up). */
    async deleteBpaResource(input: Omit<BpaRef, 'uid'>): Promise<void> {
      try {
        await custom.deleteNamespacedCustomObject({ ...API[input.kind], ...input });
      } catch (err) {
        if (!isNotFound(err)) rethrowKube(`delete ${where(input)}`, err);
      }
    },
  };
}

export type BpaResourceActivities = ReturnType<typeof createBpaResourceActivities>;
