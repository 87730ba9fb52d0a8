// One finalizer on one custom resource, set or cleared with a JSON Patch that tests the uid and
// the list read, so a retried call, a re-created object or a concurrent writer is never clobbered.
import { PatchStrategy, setHeaderOptions, type CustomObjectsApi } from '@kubernetes/client-node';
import { isNotFound, rethrowKube } from './errors.js';

const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export interface CustomResourceRef {
  namespace: string;
  name: string;
  uid: string;
}

/** Sets (`present`) or clears `finalizer`; false when the resource (this uid) is gone. */
export async function setFinalizer(
  custom: CustomObjectsApi,
  api: { group: string; version: string; plural: string },
  ref: CustomResourceRef,
  finalizer: string,
  present: boolean,
  /** How messages name the resource, e.g. `Machine ns/name`. */
  what: string,
): Promise<boolean> {
  const coordinates = { ...api, namespace: ref.namespace, name: ref.name };
  let current: string[];
  try {
    const obj = (await custom.getNamespacedCustomObject(coordinates)) as {
      metadata?: { uid?: string; finalizers?: string[] };
    };
    if (obj.metadata?.uid !== ref.uid) return false;
    current = obj.metadata.finalizers ?? [];
  } catch (err) {
    if (isNotFound(err)) return false;
    rethrowKube(`read ${what}`, err);
  }
  if (current.includes(finalizer) === present) return true;
  const items = present ? [...current, finalizer] : current.filter((f) => f !== finalizer);
  try {
    await custom.patchNamespacedCustomObject(
      {
        ...coordinates,
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
    rethrowKube(`write the finalizers of ${what}`, err); // 422 on a failed test: retried
  }
  return true;
}
