// Kubernetes Events on TaskRuns: what the build's owner sees in `kubectl describe taskrun`.
import { createHash } from 'node:crypto';
import { TASKRUN_API } from './taskrun-api.js';
import { isConflict, isNotFound, rethrowKube } from './kube-errors.js';
import type { KubeClients, TaskRunRef } from './kubernetes.js';

export interface TaskRunEvent extends TaskRunRef {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** Distinguishes repeats of one reason (an attempt number); retries of one call share it. */
  key: string;
}

export function createEventActivities({ core }: KubeClients) {
  return {
    async recordTaskRunEvent(event: TaskRunEvent): Promise<void> {
      const digest = createHash('sha256')
        .update(`${event.uid}\n${event.reason}\n${event.key}`)
        .digest('hex')
        .slice(0, 16);
      const now = new Date();
      try {
        await core.createNamespacedEvent({
          namespace: event.namespace,
          body: {
            metadata: { name: `${event.name.slice(0, 200)}.${digest}`, namespace: event.namespace },
            involvedObject: {
              apiVersion: `${TASKRUN_API.group}/${TASKRUN_API.version}`,
              kind: 'TaskRun',
              name: event.name,
              namespace: event.namespace,
              uid: event.uid,
            },
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
        if (isConflict(err) || isNotFound(err)) return; // already recorded, or the namespace is gone
        rethrowKube(
          `record Event ${event.reason} on TaskRun ${event.namespace}/${event.name}`,
          err,
        );
      }
    },
  };
}

export type EventActivities = ReturnType<typeof createEventActivities>;
