// Kubernetes adapter for the Locks the engine holds (locks/api.ts). Several workflows may
// need one object locked (platforms sharing a credentials Secret), so a Lock lists its holders
// and exists while one remains. Every write is read-modify-write on the resourceVersion, so
// holders writing at once never lose each other's entries. A Lock a person created is never
// touched: the object is locked anyway.
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import {
  LOCK_API,
  LOCK_ENGINE_LABEL,
  LOCK_HOLDERS_ANNOTATION,
  LOCK_MANAGED_BY,
  lockRef,
  type LockTarget,
} from './api.js';
import { isConflict, isNotFound, rethrowKube } from '../activities/kubernetes/errors.js';
import type { ListedMetadata } from '../activities/kubernetes/object-ref.js';

interface Holding {
  resource: string;
  apiGroup: string;
  operations: string[];
  reason: string;
}
type Holders = Record<string, Holding>;

interface LockObject {
  metadata: ListedMetadata;
}

export interface LockDeps {
  custom: CustomObjectsApi;
  /** The engine's namespace: its Locks carry it, and it only ever sees its own. */
  engineNamespace: string;
  /** Where the engine's Locks can be: every namespace when undefined. */
  namespaces?: string[];
  /**
   * False where the install runs no locks family (HOSTFLOW_FAMILIES): the cluster may have no Lock
   * CRD, so nothing is locked or listed, and every holder holds nothing.
   */
  enabled?: boolean;
}

/** Optimistic writes that lost a race are redone from a fresh read this many times. */
const MAX_ROUNDS = 8;
const MAX_OWNER = 512;
const MAX_REASON = 1024;
const DEFAULT_OPERATIONS = ['DELETE'];

export interface LockSync {
  /** `<namespace>/<name>` of each object this holder has locked now. */
  held: string[];
  /** Objects a Lock that a person created already locks: left to that Lock. */
  lockedByOthers: string[];
}

export function createLockActivities({
  custom,
  engineNamespace,
  namespaces,
  enabled = true,
}: LockDeps) {
  const managed =
    `${LOCK_MANAGED_BY.key}=${LOCK_MANAGED_BY.value},` + `${LOCK_ENGINE_LABEL}=${engineNamespace}`;
  const labels = {
    [LOCK_MANAGED_BY.key]: LOCK_MANAGED_BY.value,
    [LOCK_ENGINE_LABEL]: engineNamespace,
  };

  /** The engine's Locks: cluster-wide, or in its namespaces and `alsoIn`. */
  async function listManaged(alsoIn: string[] = []): Promise<LockObject[]> {
    try {
      if (!namespaces) {
        const all = (await custom.listClusterCustomObject({
          ...LOCK_API,
          labelSelector: managed,
        })) as { items: LockObject[] };
        return all.items;
      }
      const lists = await Promise.all(
        [...new Set([...namespaces, ...alsoIn])].map(
          (namespace) =>
            custom.listNamespacedCustomObject({
              ...LOCK_API,
              namespace,
              labelSelector: managed,
            }) as Promise<{ items: LockObject[] }>,
        ),
      );
      return lists.flatMap((list) => list.items);
    } catch (err) {
      rethrowKube('list Locks', err);
    }
  }

  const ours = (lock: LockObject) =>
    Object.entries(labels).every(([key, value]) => lock.metadata.labels?.[key] === value);

  /** Writes the Lock with these holders; false when another writer got there first. */
  async function write(
    target: { namespace: string; name: string },
    current: LockObject | undefined,
    holders: Holders,
  ): Promise<boolean | 'not ours'> {
    const { namespace, name } = target;
    const ref = `Lock ${lockRef(target)}`;
    try {
      if (Object.keys(holders).length === 0) {
        if (!current) return true;
        await custom.deleteNamespacedCustomObject({
          ...LOCK_API,
          namespace,
          name,
          body: { preconditions: { resourceVersion: current.metadata.resourceVersion } },
        });
        return true;
      }
      const body = lockObject(target, labels, holders, current?.metadata.resourceVersion);
      if (current) {
        await custom.replaceNamespacedCustomObject({ ...LOCK_API, namespace, name, body });
      } else {
        await custom.createNamespacedCustomObject({ ...LOCK_API, namespace, body });
      }
      return true;
    } catch (err) {
      if (isNotFound(err)) return current === undefined || Object.keys(holders).length === 0;
      if (!isConflict(err)) rethrowKube(`write ${ref}`, err);
      if (current) return false;
      // Created meanwhile: by another holder (try again), or by a person (leave it be).
      try {
        const found = (await custom.getNamespacedCustomObject({
          ...LOCK_API,
          namespace,
          name,
        })) as LockObject;
        return ours(found) ? false : 'not ours';
      } catch (readErr) {
        if (isNotFound(readErr)) return false;
        rethrowKube(`read ${ref}`, readErr);
      }
    }
  }

  return {
    /**
     * Makes what `holder` locks exactly `wanted`: takes the Locks it lacks, and lets go of the
     * others (deleting a Lock whose last holder it was). Idempotent; `wanted: []` releases all.
     */
    async syncLocks(input: {
      holder: string;
      wanted: LockTarget[];
      /**
       * Where else this holder may hold Locks, for an engine that serves one namespace (and so
       * lists Locks only there) yet locks objects elsewhere, such as BareMetalHosts.
       */
      alsoIn?: string[];
    }): Promise<LockSync> {
      if (!enabled) return { held: [], lockedByOthers: [] };
      const { holder, wanted } = input;
      const alsoIn = [...(input.alsoIn ?? []), ...wanted.map((target) => target.namespace)];
      const want = new Map(wanted.map((target) => [lockRef(target), target]));
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const existing = new Map(
          (await listManaged(alsoIn)).map((lock) => [lockRef(lock.metadata), lock]),
        );
        const outcome: LockSync = { held: [], lockedByOthers: [] };
        let lost = false;
        for (const [ref, lock] of existing) {
          const holders = holdersOf(lock);
          if (!holders[holder] || want.has(ref)) continue;
          delete holders[holder];
          if (!(await write(lock.metadata, lock, holders))) lost = true;
        }
        for (const [ref, target] of want) {
          const lock = existing.get(ref);
          const holders = lock ? holdersOf(lock) : {};
          const holding = holdingOf(target);
          if (JSON.stringify(holders[holder]) !== JSON.stringify(holding)) {
            holders[holder] = holding;
            const written = await write(target, lock, holders);
            if (written === 'not ours') {
              outcome.lockedByOthers.push(ref);
              continue;
            }
            if (!written) lost = true;
          }
          outcome.held.push(ref);
        }
        if (!lost) return outcome;
      }
      throw ApplicationFailure.retryable(
        `Locks of ${holder}: other holders kept changing them for ${MAX_ROUNDS} rounds`,
        'KubernetesHttp409',
      );
    },

    /** Drops holders that `ended` names (workflows no longer running); returns what it dropped. */
    async releaseLocksOfEnded(
      ended: (holders: string[]) => Promise<string[]>,
    ): Promise<Array<{ lock: string; holder: string }>> {
      const dropped: Array<{ lock: string; holder: string }> = [];
      if (!enabled) return dropped;
      const locks = await listManaged();
      const all = [...new Set(locks.flatMap((lock) => Object.keys(holdersOf(lock))))];
      const gone = new Set(all.length ? await ended(all) : []);
      for (const lock of locks) {
        const holders = holdersOf(lock);
        const leaving = Object.keys(holders).filter((holder) => gone.has(holder));
        if (leaving.length === 0) continue;
        for (const holder of leaving) delete holders[holder];
        // A lost race means a live holder wrote it: the next pass looks again.
        if ((await write(lock.metadata, lock, holders)) === true) {
          dropped.push(...leaving.map((holder) => ({ lock: lockRef(lock.metadata), holder })));
        }
      }
      return dropped;
    },
  };
}

export type LockActivities = Pick<ReturnType<typeof createLockActivities>, 'syncLocks'>;

function holdersOf(lock: LockObject): Holders {
  try {
    const parsed = JSON.parse(lock.metadata.annotations?.[LOCK_HOLDERS_ANNOTATION] ?? '{}');
    return parsed && typeof parsed === 'object' ? (parsed as Holders) : {};
  } catch {
    return {}; // edited by hand into nonsense: holders write themselves back in
  }
}

function holdingOf(target: LockTarget): Holding {
  return {
    resource: target.resource,
    apiGroup: target.apiGroup,
    operations: [...(target.operations ?? DEFAULT_OPERATIONS)].sort(),
    reason: target.reason,
  };
}

const unique = (values: string[]) => [...new Set(values)].sort();

/** The Lock as its holders need it: the union of what each locks, and who they are. */
function lockObject(
  target: { namespace: string; name: string },
  labels: Record<string, string>,
  holders: Holders,
  resourceVersion: string | undefined,
): object {
  const ids = Object.keys(holders).sort();
  const held = Object.values(holders);
  const owner = ids.join(', ');
  const reason = unique(held.map((h) => h.reason)).join('; ');
  return {
    apiVersion: `${LOCK_API.group}/${LOCK_API.version}`,
    kind: 'Lock',
    metadata: {
      name: target.name,
      namespace: target.namespace,
      labels,
      annotations: { [LOCK_HOLDERS_ANNOTATION]: JSON.stringify(holders) },
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    spec: {
      reason: reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON - 1)}…` : reason,
      owner:
        owner.length > MAX_OWNER
          ? `${ids[0]} and ${ids.length - 1} more`.slice(0, MAX_OWNER)
          : owner,
      operations: unique(held.flatMap((h) => h.operations)),
      resources: unique(held.map((h) => h.resource)),
      apiGroups: unique(held.map((h) => h.apiGroup)),
    },
  };
}
