// Kubernetes adapter for the BPA Software and Cluster resources: their status, their Events,
// the Cluster's finalizer, and deleting the members a deleted Cluster names.
import {
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Api,
  type CustomObjectsApi,
} from '@kubernetes/client-node';
import {
  BPA_CLUSTER_API,
  BPA_CLUSTER_FINALIZER,
  PROVISIONING_API,
  SOFTWARE_API,
} from '../../shared/bpa-api.js';
import { setFinalizer } from './custom-finalizer.js';
import { isNotFound, rethrowKube } from './errors.js';
import { recordEvent } from './events.js';

export type BpaKind = 'Software' | 'Cluster' | 'Provisioning';

export interface BpaRef {
  kind: BpaKind;
  namespace: string;
  name: string;
  uid: string;
}

const API = { Software: SOFTWARE_API, Cluster: BPA_CLUSTER_API, Provisioning: PROVISIONING_API };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const where = (ref: Omit<BpaRef, 'uid'>) => `${ref.kind} ${ref.namespace}/${ref.name}`;

export function createBpaResourceActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  const coordinates = ({ kind, namespace, name }: BpaRef) => ({ ...API[kind], namespace, name });

  /** Sets or clears the Cluster finalizer; false when the resource (this uid) is gone. */
  const setClusterFinalizer = (ref: BpaRef, present: boolean) =>
    setFinalizer(custom, API[ref.kind], ref, BPA_CLUSTER_FINALIZER, present, where(ref));

  return {
    addClusterFinalizer: (ref: BpaRef) => setClusterFinalizer(ref, true),
    removeClusterFinalizer: async (ref: BpaRef) => void (await setClusterFinalizer(ref, false)),

    /** Merges `status` into the resource's status (lists and conditions replace as a whole). */
    async writeBpaStatus(input: { ref: BpaRef; status: Record<string, unknown> }): Promise<void> {
      try {
        await custom.patchNamespacedCustomObjectStatus(
          { ...coordinates(input.ref), body: { status: input.status } },
          mergePatch,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowKube(`write the status of ${where(input.ref)}`, err);
      }
    },

    async recordBpaEvent(input: {
      ref: BpaRef;
      type: 'Normal' | 'Warning';
      reason: string;
      message: string;
      /** Same key, same Event: a retried call does not repeat it. */
      dedupKey: string;
    }): Promise<void> {
      const { kind, namespace, name, uid } = input.ref;
      await recordEvent(core, {
        involvedObject: {
          apiVersion: `${API[kind].group}/${API[kind].version}`,
          kind,
          namespace,
          name,
          uid,
        },
        type: input.type,
        reason: input.reason,
        message: input.message,
        dedupKey: `${uid}/${input.dedupKey}`,
      });
    },

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
