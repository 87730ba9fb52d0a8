// Kubernetes Events: what people see in `kubectl describe` for TaskRuns and host-config.
import type { CoreV1Api, V1ObjectReference } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { log } from '@temporalio/activity';
import { HOST_CONFIG_NAME } from '../../platform-config/contract.js';
import { TASKRUN_API } from '../../shared/taskrun-api.js';
import { isConflict, isNamespaceTerminating, isNotFound, rethrowKube } from './errors.js';
import type { TaskRunRef } from '../../shared/types.js';
import type { KubeClients } from './clients.js';

export interface TaskRunEvent extends TaskRunRef {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** Distinguishes repeats of one reason (an attempt number); retries of one call share it. */
  key: string;
}

/**
 * Records one Event. Its name derives from `dedupKey`, so a retried call (or a second report of
 * the same thing) finds it already there instead of repeating it.
 */
export async function recordEvent(
  core: CoreV1Api,
  event: {
    involvedObject: V1ObjectReference & { name: string; namespace: string };
    type: 'Normal' | 'Warning';
    reason: string;
    message: string;
    dedupKey: string;
  },
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
    if (isConflict(err) || isNotFound(err) || isNamespaceTerminating(err)) return;
    rethrowKube(
      `record Event ${event.reason} on ${object.kind} ${object.namespace}/${object.name}`,
      err,
    );
  }
}

/**
 * A Warning Event on the engine's host-config ConfigMap (what garbage collection did, say),
 * best-effort: a failure to record it is logged, never thrown.
 */
export async function warnOnHostConfig(
  core: CoreV1Api,
  engineNamespace: string,
  event: { reason: string; message: string; dedupKey: string },
): Promise<void> {
  await recordEvent(core, {
    involvedObject: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: HOST_CONFIG_NAME,
      namespace: engineNamespace,
    },
    type: 'Warning',
    ...event,
  }).catch((err: unknown) => log.warn('could not record the Event', { error: String(err) }));
}

export function createEventActivities({ core }: KubeClients) {
  return {
    async recordTaskRunEvent(event: TaskRunEvent): Promise<void> {
      await recordEvent(core, {
        involvedObject: {
          apiVersion: `${TASKRUN_API.group}/${TASKRUN_API.version}`,
          kind: 'TaskRun',
          name: event.name,
          namespace: event.namespace,
          uid: event.uid,
        },
        type: event.type,
        reason: event.reason,
        message: event.message,
        dedupKey: `${event.uid}\n${event.reason}\n${event.key}`,
      });
    },
  };
}

export type EventActivities = ReturnType<typeof createEventActivities>;
