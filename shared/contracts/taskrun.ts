// The TaskRun workflow's contract (`taskrun/<ns>/<name>/<uid>`): its input and outcome, the
// messages it takes, and how it is started. Imported by the bridge, activities and the CLI as
// well as the workflow, so it imports nothing of the workflow's own (docs/architecture.md,
// "Workflow families").
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { clipBytes, printable } from '../../platform-config/platform.js';
import { KIND, SA } from '../search-attributes.js';
import { WORKFLOW_ID } from '../workflow-ids.js';
import { objectAttributes, type WorkflowStart } from '../workflow-start.js';

/** Which TaskRun: its uid tells it apart from a same-named successor. */
export interface TaskRunRef {
  namespace: string;
  name: string;
  uid: string;
}

export interface TaskRunWorkflowInput extends TaskRunRef {
  platform: string;
  /** Events a run's history may reach before it continues as new (default 5,000; at least 10). */
  maxHistory?: number;
  /** What an earlier run of this workflow held and answered, carried across continue-as-new. */
  carried?: unknown;
}

export type TaskRunOutcome =
  | { served: 'local' }
  | { served: 'static'; host: string; user: string }
  | { served: 'dynamic'; instance: string; user: string }
  | { served: 'error'; message: string }
  | { served: 'nothing'; reason: string };

export type TaskRunWorkflow = (input: TaskRunWorkflowInput) => Promise<TaskRunOutcome>;

/**
 * A served Secret this TaskRun already has when its workflow starts: an earlier run of the
 * workflow (terminated by an operator, say) delivered it, and the build may hold its key.
 */
export interface EarlierDelivery {
  /** The build user, one of this TaskRun's own names. */
  user: string;
  address: string;
}

/** What the bridge last saw of the TaskRun. Only ever moves forward: active → completed → deleted. */
export type TaskRunState = 'active' | 'completed' | 'deleted';

export const TASKRUN_STATE_ORDER: readonly TaskRunState[] = ['active', 'completed', 'deleted'];

export interface TaskRunObservation {
  state: TaskRunState;
  /**
   * The TaskRun carries the original controller's finalizer (it served the TaskRun before a move
   * to hostflow): the workflow releases it once the TaskRun has ended and is cleaned up.
   */
  originalFinalizer?: true;
}

export const taskRunObserved = defineSignal<[TaskRunObservation]>('taskRunObserved');

export type Phase =
  'Allocating' | 'Waiting' | 'Provisioning' | 'Ready' | 'Failed' | 'CleaningUp' | 'Done';

export interface TaskRunStatus {
  phase: Phase;
  observed: TaskRunState;
  /** The serving host's name (`localhost` for local platforms). */
  host?: string;
  user?: string;
  failedHosts: string[];
  error?: string;
  /** The original controller's finalizer is on the TaskRun: released at clean-up. */
  originalFinalizer?: true;
}

export const taskRunStatus = defineQuery<TaskRunStatus>('status');

/** What `hostflow retry taskrun` hears back: the error it clears, and that serving starts again. */
export interface TaskRunRetryOutcome {
  /** The error the build had been answered with (its Secret is deleted). */
  previousError: string;
  /** Retries of this TaskRun so far, this one included. */
  retry: number;
}

/**
 * Serve a Failed TaskRun that still runs again, once its cause is fixed: its error Secret is
 * deleted and provisioning starts over. Validated: refused unless the TaskRun is Failed and running.
 */
export const retryTaskRun = defineUpdate<TaskRunRetryOutcome, []>('retryTaskRun');

/** The longest PLATFORM shown or indexed (a valid one has at most 63 characters). */
const MAX_SHOWN = 100;

/**
 * The TaskRun's workflow. A finished workflow is never restarted by a late event; a failed one
 * may be. PLATFORM reaches the workflow whole (it answers a bad one with an error Secret).
 */
export function taskRunStart(
  taskRun: TaskRunRef & { platform: string },
  maxHistory?: number,
): WorkflowStart<TaskRunWorkflow> {
  const { namespace, name, uid, platform } = taskRun;
  const shown = printable(platform, MAX_SHOWN);
  return {
    workflowType: 'taskRunWorkflow',
    workflowId: WORKFLOW_ID.taskRun(namespace, name, uid),
    args: [{ namespace, name, uid, platform, ...(maxHistory ? { maxHistory } : {}) }],
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    typedSearchAttributes: [
      ...objectAttributes(KIND.taskRun, { namespace, name }),
      { key: SA.platform, value: shown },
    ],
    // Temporal takes a summary of at most 400 bytes (with its JSON quotes).
    staticSummary: clipBytes(`TaskRun ${namespace}/${name} on ${shown}`, 380),
    staticDetails:
      `Serves TaskRun **${namespace}/${name}** (uid ${uid}), platform \`${shown}\`: ` +
      'writes its multi-platform-ssh Secret, waits for it to finish, then cleans up.',
  };
}
