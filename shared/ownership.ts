// The mark on everything the engine creates, and how it is read: a delete or replace first
// checks that the object carries the mark for the object the engine acts for (by uid), and
// leaves anything else alone. The one place these names are spelled.
import { ANNOTATIONS } from '../platform-config/contract.js';

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'hostflow' as const;
/** The uid of the object the engine made it for (a Provisioning, a Machine, a TaskRun). */
export const OWNER_UID_ANNOTATION = 'hostflow.dev/owner-uid';
/** `<Kind> <namespace>/<name>` of that object, for people reading the object. */
const OWNER_ANNOTATION = 'hostflow.dev/owner';

/** The object the engine acts for, and so the owner of what it makes. */
export interface Owner {
  /** e.g. `cluster.x-k8s.io/v1beta1`: where the owner's Events point. */
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

/** The Event reason when the engine leaves an object alone because it is not its own. */
export const NOT_OWNED_REASON = 'NotOwned';

export const describeOwner = (owner: Owner) => `${owner.kind} ${owner.namespace}/${owner.name}`;

/** Labels and annotations that mark an object as made by the engine for `owner`. */
export function ownershipMark(owner: Owner): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
    annotations: { [OWNER_UID_ANNOTATION]: owner.uid, [OWNER_ANNOTATION]: describeOwner(owner) },
  };
}

export interface MarkedMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{ uid?: string; kind?: string; name?: string }>;
}

/**
 * Whether `meta` carries the mark for the owner with `uid`: the owner annotation, or an
 * ownerReference with that uid (what the original multi-platform controller put on its
 * TaskRun Secrets, and what Cluster API's providers put on theirs), or the TaskRun uid
 * annotation earlier hostflow versions wrote on TaskRun Secrets.
 */
export function markedFor(meta: MarkedMetadata | undefined, uid: string): boolean {
  if (!meta || !uid) return false;
  const annotations = meta.annotations ?? {};
  if (annotations[OWNER_UID_ANNOTATION] === uid) return true;
  if (annotations[ANNOTATIONS.ownerUid] === uid) return true;
  return (meta.ownerReferences ?? []).some((ref) => ref.uid === uid);
}

/** Whether `meta` carries some owner's mark at all (engine-made, maybe for another owner). */
export function markedForAnyone(meta: MarkedMetadata | undefined): boolean {
  const annotations = meta?.annotations ?? {};
  return (
    annotations[OWNER_UID_ANNOTATION] !== undefined ||
    annotations[ANNOTATIONS.ownerUid] !== undefined ||
    (meta?.ownerReferences ?? []).length > 0
  );
}
