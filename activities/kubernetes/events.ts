// Events on TaskRuns and on host-config: thin delegations to object-events.ts.
import type { CoreV1Api } from '@kubernetes/client-node';
import { log } from '@temporalio/activity';
import { HOST_CONFIG_NAME } from '../../platform-config/contract.js';
import { TASKRUN_API } from '../../shared/taskrun-api.js';
import { recordObjectEvent } from './object-events.js';
import { customRef } from './object-ref.js';
import type { TaskRunRef } from '../../shared/contracts/taskrun.js';
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
  const hostConfig = { kind: 'ConfigMap', namespace: engineNamespace, name: HOST_CONFIG_NAME };
  await recordObjectEvent(core, hostConfig, { type: 'Warning', ...event }).catch((err: unknown) =>
    log.warn('could not record the Event', { error: String(err) }),
  );
}

export function createEventActivities({ core }: KubeClients) {
  return {
    recordTaskRunEvent: ({ type, reason, message, key, ...ref }: TaskRunEvent) =>
      recordObjectEvent(
        core,
        customRef(TASKRUN_API, 'TaskRun', ref),
        { type, reason, message, dedupKey: `${ref.uid}\n${reason}\n${key}` },
        { keyByUid: false },
      ),
  };
}

export type EventActivities = ReturnType<typeof createEventActivities>;
