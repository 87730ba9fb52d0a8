// One finalizer on one object, by reference, set or cleared with a JSON Patch that tests the uid
// and the list read, so a retried call, a re-created object or a concurrent writer is never
// clobbered. Every per-kind finalizer activity (addMachineFinalizer, addProvisioningFinalizer,
// addClusterFinalizer…) delegates here.
import {
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Api,
  type CustomObjectsApi,
} from '@kubernetes/client-node';
import { isNotFound, rethrowKube } from './errors.js';
import { describeObject, type ObjectRef } from './object-ref.js';

const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

/** How to read and JSON-patch one object, whatever its kind. */
interface FinalizerTarget {
  read(): Promise<{ metadata?: { uid?: string; finalizers?: string[] } }>;
  patch(ops: object[]): Promise<unknown>;
}

/** What setting a finalizer did: 'gone' when the object (this uid) is. */
type FinalizerChange = 'changed' | 'unchanged' | 'gone';

/** Sets (`present`) or clears `finalizer`. */
async function setFinalizerOn(
  target: FinalizerTarget,
  uid: string | undefined,
  finalizer: string,
  present: boolean,
  what: string,
): Promise<FinalizerChange> {
  let current: string[];
  let seenUid: string;
  try {
    const obj = await target.read();
    seenUid = obj.metadata?.uid ?? '';
    if (uid !== undefined && seenUid !== uid) return 'gone';
    current = obj.metadata?.finalizers ?? [];
  } catch (err) {
    if (isNotFound(err)) return 'gone';
    rethrowKube(`read ${what}`, err);
  }
  if (current.includes(finalizer) === present) return 'unchanged';
  const items = present ? [...current, finalizer] : current.filter((f) => f !== finalizer);
  try {
    await target.patch([
      { op: 'test', path: '/metadata/uid', value: seenUid },
      current.length
        ? { op: 'test', path: '/metadata/finalizers', value: current }
        : { op: 'add', path: '/metadata/finalizers', value: [] },
      { op: 'replace', path: '/metadata/finalizers', value: items },
    ]);
  } catch (err) {
    if (isNotFound(err)) return 'gone';
    rethrowKube(`write the finalizers of ${what}`, err); // 422 on a failed test: retried
  }
  return 'changed';
}

/** Sets (`present`) or clears `finalizer` on a namespaced custom resource; false when it (this uid) is gone. */
export async function setObjectFinalizer(
  custom: CustomObjectsApi,
  ref: ObjectRef,
  finalizer: string,
  present: boolean,
): Promise<boolean> {
  return (await changeObjectFinalizer(custom, ref, finalizer, present)) !== 'gone';
}

/** As setObjectFinalizer, saying whether the finalizers changed. */
export function changeObjectFinalizer(
  custom: CustomObjectsApi,
  ref: ObjectRef,
  finalizer: string,
  present: boolean,
): Promise<FinalizerChange> {
  if (!ref.api || !ref.namespace)
    throw new Error(
      `setObjectFinalizer: ${describeObject(ref)} is not a namespaced custom resource`,
    );
  const coordinates = { ...ref.api, namespace: ref.namespace, name: ref.name };
  return setFinalizerOn(
    {
      read: () => custom.getNamespacedCustomObject(coordinates),
      patch: (body) => custom.patchNamespacedCustomObject({ ...coordinates, body }, jsonPatch),
    },
    ref.uid,
    finalizer,
    present,
    describeObject(ref),
  );
}

/** Sets (`present`) or clears `finalizer` on a Secret, whichever uid it has; false when gone. */
export async function setSecretFinalizer(
  core: CoreV1Api,
  secret: { namespace: string; name: string },
  finalizer: string,
  present: boolean,
): Promise<boolean> {
  const change = await setFinalizerOn(
    {
      read: () => core.readNamespacedSecret(secret),
      patch: (body) => core.patchNamespacedSecret({ ...secret, body }, jsonPatch),
    },
    undefined,
    finalizer,
    present,
    `Secret ${secret.namespace}/${secret.name}`,
  );
  return change !== 'gone';
}
