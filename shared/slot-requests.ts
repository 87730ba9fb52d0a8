// Slot request ids: how a TaskRun workflow's requests to its allocator are named, so a retried
// request never takes two slots, and the allocator can tell which run of which workflow holds a
// slot (a workflow id is reused when an operator terminates a run and a new one starts).

/** `<workflow id>#<run id>.<attempt>`; without a run id, the form releases before v2 used. */
export function slotRequestId(
  workflowId: string,
  attempt: number | string,
  runId?: string,
): string {
  return runId ? `${workflowId}#${runId}.${attempt}` : `${workflowId}#${attempt}`;
}

export const workflowIdOfRequest = (requestId: string): string =>
  requestId.slice(0, requestId.lastIndexOf('#'));

/** The run that made the request; undefined for the older form, which does not say. */
export function runIdOfRequest(requestId: string): string | undefined {
  const tail = requestId.slice(requestId.lastIndexOf('#') + 1);
  const dot = tail.lastIndexOf('.');
  return dot > 0 ? tail.slice(0, dot) : undefined;
}

/** The holder id of a slot found after the allocator was lost, whose attempt is unknown. */
export const rebuiltHolder = (workflowId: string, runId?: string): string =>
  slotRequestId(workflowId, 'rebuilt', runId);

/** A dynamic platform's allocator has one pseudo-host: its max-instances VM slots. */
export const VM_SLOTS_HOST = 'vm-slots';
