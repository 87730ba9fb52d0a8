// An object named by reference, whatever its kind: what the generic Event, status and finalizer
// helpers (object-events.ts, object-status.ts, object-finalizers.ts) act on.
import type { V1ObjectReference } from '@kubernetes/client-node';

/** A custom resource's API: where to read and patch it. */
export interface ResourceApi {
  group: string;
  version: string;
  plural: string;
}

export interface ObjectRef {
  /** A custom resource's API; absent for a core (v1) object such as a Node or a ConfigMap. */
  api?: ResourceApi;
  kind: string;
  /** Absent or empty for a cluster-scoped object. */
  namespace?: string;
  name: string;
  /** When given, only the object with this uid is acted on (not one re-created under its name). */
  uid?: string;
}

/** What the adapters read of a namespaced object they list: its name, version, labels, annotations. */
export interface ListedMetadata {
  name: string;
  namespace: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A namespaced custom resource, as a workflow names it. */
export interface CustomResourceRef {
  namespace: string;
  name: string;
  uid: string;
}

/** A custom resource's reference. */
export function customRef(
  api: ResourceApi,
  kind: string,
  ref: { namespace?: string; name: string; uid?: string },
): ObjectRef {
  return {
    api,
    kind,
    ...(ref.namespace ? { namespace: ref.namespace } : {}),
    name: ref.name,
    ...(ref.uid ? { uid: ref.uid } : {}),
  };
}

/** How messages name the object: `Machine ns/name`, `MachineConfigPool name`. */
export function describeObject(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

/** The reference an Event's involvedObject carries. */
export function involvedObject(ref: ObjectRef): V1ObjectReference & {
  name: string;
  namespace: string;
} {
  return {
    apiVersion: ref.api ? `${ref.api.group}/${ref.api.version}` : 'v1',
    kind: ref.kind,
    namespace: ref.namespace ?? '',
    name: ref.name,
    ...(ref.uid ? { uid: ref.uid } : {}),
  };
}
