// Kubernetes Events on any object, by reference: what people see in `kubectl describe`. Every
// per-kind Event activity (recordMachineEvent, recordBpaEvent, recordRolloutEvent…) delegates here.
import type { CoreV1Api, V1ObjectReference } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { isConflict, isNamespaceTerminating, isNotFound, rethrowKube } from './errors.js';
import { involvedObject, type ObjectRef } from './object-ref.js';

export interface ObjectEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** Same key, same Event: a retried call (or a second report of it) does not repeat it. */
  dedupKey: string;
}

/**
 * Records `event` on `ref`, its key scoped by the object's uid unless `keyByUid` is false (a
 * re-created object is another, with Events of its own).
 */
export function recordObjectEvent(
  core: CoreV1Api,
  ref: ObjectRef,
  event: ObjectEvent,
  { keyByUid = true }: { keyByUid?: boolean } = {},
): Promise<void> {
  const { uid } = ref;
  return recordEvent(core, {
    involvedObject: involvedObject(ref),
    ...event,
    dedupKey: uid && keyByUid ? `${uid}/${event.dedupKey}` : event.dedupKey,
  });
}

/**
 * Records one Event. Its name derives from `dedupKey`, so a retried call (or a second report of
 * the same thing) finds it already there instead of repeating it.
 */
export async function recordEvent(
  core: CoreV1Api,
  event: ObjectEvent & { involvedObject: V1ObjectReference & { name: string; namespace: string } },
): Promise<void> {
  const { involvedObject: object } = event;
  // A cluster-scoped object's (a Node's, a pool's) Events live in `default`, as the kubelet's do.
  const namespace = object.namespace || 'default';
  const digest = createHash('sha256').update(event.dedupKey).digest('hex').slice(0, 16);
  const now = new Date();
  try {
    await core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { name: `${object.name.slice(0, 200)}.${digest}`, namespace },
        involvedObject: object,
        type: event.type,
        reason: event.reason,
        message: event.message.slice(0, 1024),
        source: { component: 'hostflow' },
        reportingComponent: 'hostflow',
        reportingInstance: 'hostflow-worker',
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    });
  } catch (err) {
    // Already recorded, or the namespace is gone or going: an Event there would go with it.
    if (isConflict(err) || isNamespaceTerminating(err) || isNotFound(err)) return;
    rethrowKube(
      `record Event ${event.reason} on ${object.kind} ${object.namespace}/${object.name}`,
      err,
    );
  }
}
