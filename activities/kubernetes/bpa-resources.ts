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
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
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
  async function setFinalizer(ref: BpaRef, present: boolean): Promise<boolean> {
    let current: string[];
    try {
      const obj = (await custom.getNamespacedCustomObject(coordinates(ref))) as {
        metadata?: { uid?: string; finalizers?: string[] };
      };
      if (obj.metadata?.uid !== ref.uid) return false;
      current = obj.metadata.finalizers ?? [];
    } catch (err) {
      if (isNotFound(err)) return false;
      rethrowKube(`read ${where(ref)}`, err);
    }
    if (current.includes(BPA_CLUSTER_FINALIZER) === present) return true;
    const items = present
      ? [...current, BPA_CLUSTER_FINALIZER]
      : current.filter((f) => f !== BPA_CLUSTER_FINALIZER);
    try {
      await custom.patchNamespacedCustomObject(
        {
          ...coordinates(ref),
          body: [
            { op: 'test', path: '/metadata/uid', value: ref.uid },
            current.length
              ? { op: 'test', path: '/metadata/finalizers', value: current }
              : { op: 'add', path: '/metadata/finalizers', value: [] },
            { op: 'replace', path: '/metadata/finalizers', value: items },
          ],
        },
        jsonPatch,
      );
    } catch (err) {
      if (isNotFound(err)) return false;
      rethrowKube(`write the finalizers of ${where(ref)}`, err); // 422 on a failed test: retried
    }
    return true;
  }

  return {
    addClusterFinalizer: (ref: BpaRef) => setFinalizer(ref, true),
    removeClusterFinalizer: async (ref: BpaRef) => void (await setFinalizer(ref, false)),

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
