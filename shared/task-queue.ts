// The Temporal task queue every hostflow worker polls (HOSTFLOW_TASK_QUEUE overrides it), and the
// task priorities on it.

export const TASK_QUEUE = 'hostflow';

/**
 * Temporal task priority of an allocator's workflow tasks and activities (1 runs first, 5 last,
 * 3 when unset): every TaskRun of its platform waits on it, so in a burst its tasks go ahead of
 * theirs instead of queueing behind the workflow tasks of every new TaskRun.
 */
export const ALLOCATOR_PRIORITY = { priorityKey: 1 } as const;
