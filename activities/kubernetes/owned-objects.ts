// The one implementation of "delete or replace only if ours": the object is read, its mark
// checked (shared/ownership.ts), and only then deleted or replaced, with the uid and
// resourceVersion read as preconditions so nothing written in between is clobbered. An object
// without the mark is left alone, and a Warning Event on the owner says so.
import type { CoreV1Api, V1ObjectMeta } from '@kubernetes/client-node';
import { log } from '@temporalio/activity';
import {
  describeOwner,
  markedFor,
  markedForAnyone,
  NOT_OWNED_REASON,
  OWNER_UID_ANNOTATION,
  type Owner,
} from '../../shared/ownership.js';
import { isConflict, isNotFound, rethrowKube, rethrowTenantWrite } from './errors.js';
import { recordEvent } from './object-events.js';

/** Reads of an object another writer changes meanwhile, per try. */
const ATTEMPTS = 3;

export interface OwnedTarget {
  /** How messages name it, e.g. `Secret ns/name`. */
  what: string;
  read(): Promise<{ metadata?: V1ObjectMeta }>;
}

/** Whether the object is ours to touch; by default, marked for the owner's uid. */
export type OwnershipCheck = (meta: V1ObjectMeta | undefined) => boolean | Promise<boolean>;

const defaultCheck =
  (owner: Owner): OwnershipCheck =>
  (meta) =>
    markedFor(meta, owner.uid);

/**
 * A Warning Event on `owner`: `what` was not ours, so it was left alone (once per verb). Best
 * effort, as every Warning the engine raises: an Event it may not write fails nothing else.
 */
export async function warnNotOwned(
  core: CoreV1Api,
  owner: Owner,
  what: string,
  verb: 'delete' | 'replace',
  why?: string,
): Promise<void> {
  const reason =
    why ??
    `it does not carry hostflow's mark for ${describeOwner(owner)} ` +
      `(annotation ${OWNER_UID_ANNOTATION} or an ownerReference with its uid)`;
  await recordEvent(core, {
    involvedObject: {
      apiVersion: owner.apiVersion,
      kind: owner.kind,
      namespace: owner.namespace,
      name: owner.name,
      uid: owner.uid,
    },
    type: 'Warning',
    reason: NOT_OWNED_REASON,
    message: `${what} was left alone: ${reason}; hostflow did not ${verb} it`,
    dedupKey: `${owner.uid}/not-owned/${verb}/${what}`,
  }).catch((err: unknown) => log.warn('could not record the Event', { error: String(err) }));
}

/** Deletes the object if it is ours; otherwise leaves it and warns on `owner`. */
export async function deleteIfOurs(
  core: CoreV1Api,
  owner: Owner,
  target: OwnedTarget & {
    delete(preconditions: { uid?: string; resourceVersion?: string }): Promise<unknown>;
  },
  options: {
    isOurs?: OwnershipCheck;
    why?: string;
    /** No Event for an object marked as another owner's (a same-named successor's, say). */
    quietIfAnother?: boolean;
  } = {},
): Promise<'deleted' | 'absent' | 'not-ours'> {
  const isOurs = options.isOurs ?? defaultCheck(owner);
  for (let attempt = 1; ; attempt += 1) {
    try {
      const { metadata } = await target.read();
      if (!(await isOurs(metadata))) {
        if (!(options.quietIfAnother && markedForAnyone(metadata)))
          await warnNotOwned(core, owner, target.what, 'delete', options.why);
        return 'not-ours';
      }
      await target.delete({ uid: metadata?.uid, resourceVersion: metadata?.resourceVersion });
      return 'deleted';
    } catch (err) {
      if (isNotFound(err)) return 'absent';
      if (isConflict(err) && attempt < ATTEMPTS) continue; // changed since read: read again
      rethrowKube(`delete ${target.what}`, err);
    }
  }
}

/**
 * Creates the object, or replaces it when it exists and is ours; one that is not ours is left
 * alone (and `owner` warned). `body` is the whole object, which a replace writes as it is.
 */
export async function createOrReplaceIfOurs<T extends { metadata?: V1ObjectMeta }>(
  core: CoreV1Api,
  owner: Owner,
  target: OwnedTarget & {
    create(body: T): Promise<unknown>;
    replace(body: T): Promise<unknown>;
  },
  body: T,
  options: { isOurs?: OwnershipCheck } = {},
): Promise<'written' | 'not-ours'> {
  const isOurs = options.isOurs ?? defaultCheck(owner);
  for (let attempt = 1; ; attempt += 1) {
    try {
      try {
        await target.create(body);
        return 'written';
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
      const { metadata } = await target.read();
      if (!(await isOurs(metadata))) {
        await warnNotOwned(core, owner, target.what, 'replace');
        return 'not-ours';
      }
      await target.replace({
        ...body,
        metadata: { ...body.metadata, resourceVersion: metadata?.resourceVersion },
      });
      return 'written';
    } catch (err) {
      // Deleted or changed between the read and the replace: look again.
      if ((isNotFound(err) || isConflict(err)) && attempt < ATTEMPTS) continue;
      // Every object written here is in a tenant's namespace: a 403 is the workflow's to answer.
      rethrowTenantWrite(`write ${target.what}`, err);
    }
  }
}
