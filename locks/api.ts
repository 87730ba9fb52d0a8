// The kotas.tech Lock as the engine writes it (deploy/families/locks/kotas-lock.yaml): the API,
// and the label and annotation by which the engine knows its own Locks and who holds each.
import { MANAGED_BY, MANAGED_BY_LABEL } from '../shared/ownership.js';

export const LOCK_API = {
  group: 'kotas.tech',
  version: 'v1',
  plural: 'locks',
} as const;

/** The label by which a namespace opts in to Locks, as in the original. */
export const LOCKABLE_LABEL = { key: 'lockable', value: 'true' } as const;

/**
 * Where the Locks of cluster-scoped objects (Nodes) live, named like the object
 * (deploy/locks/cluster-scoped-policy.yaml).
 */
export const CLUSTER_LOCKS_NAMESPACE = 'cluster-locks';

/** On every Lock the engine created; a Lock without it belongs to a person and is left alone. */
export const LOCK_MANAGED_BY = { key: MANAGED_BY_LABEL, value: MANAGED_BY } as const;

/**
 * Which engine (by its namespace) holds it: engines sharing a cluster, each with its own Temporal
 * namespace, never take each other's holders for ended workflows.
 */
export const LOCK_ENGINE_LABEL = 'hostflow.dev/engine';

/** JSON map of holder workflow id → what it locks; the Lock exists while it has a holder. */
export const LOCK_HOLDERS_ANNOTATION = 'hostflow.dev/lock-holders';

/** What a workflow locks: one namespaced object, for the operations its work cannot survive. */
export interface LockTarget {
  namespace: string;
  name: string;
  /** Plural resource, e.g. `secrets`. */
  resource: string;
  /** `''` for the core group. */
  apiGroup: string;
  /** Default DELETE only: updates (a rotated credential) stay possible. */
  operations?: Array<'UPDATE' | 'DELETE'>;
  /** Why, in words an operator who is refused understands. */
  reason: string;
}

export const lockRef = (target: { namespace: string; name: string }): string =>
  `${target.namespace}/${target.name}`;
