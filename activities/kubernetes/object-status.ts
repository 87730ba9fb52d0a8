// A custom resource's status, merged in by reference: the one status write every family's
// per-kind activity (writeMachineStatus, writePoolStatus, writeBpaStatus…) delegates to. Those
// are named write…Status: by that name hostflow/status-through-reports keeps their calls in
// workflows to the report classes.
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { isNotFound, rethrowKube, rethrowTenantWrite } from './errors.js';
import { describeObject, type ObjectRef } from './object-ref.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

/**
 * Merges `status` into the object's status (lists and conditions replace as a whole); nothing
 * when it is gone. `tenant`: the object is in a tenant's namespace, so a refusal (403) is the
 * non-retryable failure the workflow answers on the object.
 */
export async function writeObjectStatus(
  custom: CustomObjectsApi,
  ref: ObjectRef,
  status: Record<string, unknown>,
  { tenant = false }: { tenant?: boolean } = {},
): Promise<void> {
  if (!ref.api)
    throw new Error(`writeObjectStatus: ${describeObject(ref)} is not a custom resource`);
  const body = { status };
  try {
    if (ref.namespace)
      await custom.patchNamespacedCustomObjectStatus(
        { ...ref.api, namespace: ref.namespace, name: ref.name, body },
        MERGE_PATCH,
      );
    else
      await custom.patchClusterCustomObjectStatus(
        { ...ref.api, name: ref.name, body },
        MERGE_PATCH,
      );
  } catch (err) {
    if (isNotFound(err)) return;
    (tenant ? rethrowTenantWrite : rethrowKube)(`write the status of ${describeObject(ref)}`, err);
  }
}
