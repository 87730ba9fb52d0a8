// Signals and queries of the TaskRun workflow: how the bridge reports what it observed.
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** What the bridge last saw of the TaskRun. Only ever moves forward: active → completed → deleted. */
export type TaskRunState = 'active' | 'completed' | 'deleted';

export const TASKRUN_STATE_ORDER: readonly TaskRunState[] = ['active', 'completed', 'deleted'];

export interface TaskRunObservation {
  state: TaskRunState;
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
}

export const taskRunStatus = defineQuery<TaskRunStatus>('status');
