// Events on TaskRuns and on host-config: thin delegations to object-events.ts.
import type { CoreV1Api } from '@kubernetes/client-node';
import { log } from '@temporalio/activity';
import { HOST_CONFIG_NAME } from '../../platform-config/contract.js';
import { TASKRUN_API } from '../../shared/taskrun-api.js';
import { recordEvent } from './object-events.js';
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
