// A workflow's history told as steps: each activity (with the summary the workflow gave it) and
// how it ended, local activities, timers, child workflows, signals in words, phase changes, and
// how the run ended.
// Only names, summaries, failure messages and a few known signal fields are read, never other
// payloads: what a step carried stays in Temporal.
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { SA } from '../shared/search-attributes.js';

export type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
type HistoryEvent = NonNullable<History['events']>[number];
type Payload = Parameters<typeof defaultPayloadConverter.fromPayload>[0];

export type StepKind =
  | 'workflow'
  | 'activity'
  | 'local activity'
  | 'timer'
  | 'signal'
  | 'signal sent'
  | 'update'
  | 'child workflow'
  | 'phase';

export interface Step {
  /** When it began, ISO. */
  at: string;
  kind: StepKind;
  /** The activity, timer, signal or update name, where there is one. */
  name?: string;
  text: string;
  /** How it ended; absent for instant steps (a signal, a phase change). */
  outcome?: 'running' | 'completed' | 'failed' | 'timed out' | 'canceled' | 'fired';
  /** When it ended, ISO. */
  endedAt?: string;
  attempts?: number;
  error?: string;
}

export function timeline(history: History): Step[] {
  const steps: Step[] = [];
  const open = new Map<string, Step>();
  const begin = (key: string, step: Step) => {
    steps.push(step);
    open.set(key, step);
  };
  const end = (key: string, event: HistoryEvent, outcome: Step['outcome'], failure?: unknown) => {
    const step = open.get(key);
    if (!step) return;
    step.outcome = outcome;
    step.endedAt = iso(event);
    if (failure) step.error = message(failure);
  };
  for (const e of history.events ?? []) {
    const at = iso(e);
    const summary = decode(e.userMetadata?.summary);
    if (e.workflowExecutionStartedEventAttributes) {
      const a = e.workflowExecutionStartedEventAttributes;
      const from = a.continuedExecutionRunId
        ? ` (continued from run ${a.continuedExecutionRunId})`
        : '';
      steps.push({ at, kind: 'workflow', text: `started${summary ? `: ${summary}` : ''}${from}` });
    } else if (e.activityTaskScheduledEventAttributes) {
      const name = e.activityTaskScheduledEventAttributes.activityType?.name ?? 'activity';
      begin(`a${String(e.eventId)}`, {
        at,
        kind: 'activity',
        name,
        text: typeof summary === 'string' ? summary : name,
        outcome: 'running',
      });
    } else if (e.activityTaskStartedEventAttributes) {
      const a = e.activityTaskStartedEventAttributes;
      const step = open.get(`a${String(a.scheduledEventId)}`);
      if (step && (a.attempt ?? 1) > 1) step.attempts = a.attempt ?? 1;
    } else if (e.activityTaskCompletedEventAttributes) {
      end(`a${String(e.activityTaskCompletedEventAttributes.scheduledEventId)}`, e, 'completed');
    } else if (e.activityTaskFailedEventAttributes) {
      const a = e.activityTaskFailedEventAttributes;
      end(`a${String(a.scheduledEventId)}`, e, 'failed', a.failure);
    } else if (e.activityTaskTimedOutEventAttributes) {
      const a = e.activityTaskTimedOutEventAttributes;
      end(`a${String(a.scheduledEventId)}`, e, 'timed out', a.failure);
    } else if (e.activityTaskCanceledEventAttributes) {
      end(`a${String(e.activityTaskCanceledEventAttributes.scheduledEventId)}`, e, 'canceled');
    } else if (e.markerRecordedEventAttributes) {
      const step = localActivity(e, at);
      if (step) steps.push(step);
    } else if (e.timerStartedEventAttributes) {
      const a = e.timerStartedEventAttributes;
      const wait = `wait ${seconds(a.startToFireTimeout)}`;
      begin(`t${a.timerId}`, {
        at,
        kind: 'timer',
        text: typeof summary === 'string' ? `${wait}: ${summary}` : wait,
        outcome: 'running',
      });
    } else if (e.timerFiredEventAttributes) {
      end(`t${e.timerFiredEventAttributes.timerId}`, e, 'fired');
    } else if (e.timerCanceledEventAttributes) {
      end(`t${e.timerCanceledEventAttributes.timerId}`, e, 'canceled');
    } else if (e.workflowExecutionSignaledEventAttributes) {
      const a = e.workflowExecutionSignaledEventAttributes;
      const name = a.signalName ?? 'signal';
      steps.push({
        at,
        kind: 'signal',
        name,
        text: signalWords(name, decode(a.input?.payloads?.[0])),
      });
    } else if (e.signalExternalWorkflowExecutionInitiatedEventAttributes) {
      const a = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
      begin(`s${String(e.eventId)}`, {
        at,
        kind: 'signal sent',
        name: a.signalName ?? undefined,
        text: `signal ${a.signalName} to ${a.workflowExecution?.workflowId}`,
        outcome: 'running',
      });
    } else if (e.externalWorkflowExecutionSignaledEventAttributes) {
      end(
        `s${String(e.externalWorkflowExecutionSignaledEventAttributes.initiatedEventId)}`,
        e,
        'completed',
      );
    } else if (e.signalExternalWorkflowExecutionFailedEventAttributes) {
      const a = e.signalExternalWorkflowExecutionFailedEventAttributes;
      end(`s${String(a.initiatedEventId)}`, e, 'failed');
      const step = open.get(`s${String(a.initiatedEventId)}`);
      if (step) step.error = 'the workflow to signal is not running';
    } else if (e.workflowExecutionUpdateAcceptedEventAttributes) {
      const a = e.workflowExecutionUpdateAcceptedEventAttributes;
      const name = a.acceptedRequest?.input?.name ?? 'update';
      begin(`u${a.acceptedRequest?.meta?.updateId ?? a.protocolInstanceId}`, {
        at,
        kind: 'update',
        name,
        text: `update ${name}`,
        outcome: 'running',
      });
    } else if (e.workflowExecutionUpdateCompletedEventAttributes) {
      const a = e.workflowExecutionUpdateCompletedEventAttributes;
      const failure = a.outcome?.failure;
      end(`u${a.meta?.updateId}`, e, failure ? 'failed' : 'completed', failure);
    } else if (e.startChildWorkflowExecutionInitiatedEventAttributes) {
      const a = e.startChildWorkflowExecutionInitiatedEventAttributes;
      begin(`c${String(e.eventId)}`, {
        at,
        kind: 'child workflow',
        name: a.workflowType?.name ?? undefined,
        text: `child ${a.workflowId}${typeof summary === 'string' ? `: ${summary}` : ''}`,
        outcome: 'running',
      });
    } else if (childEnd(e)) {
      const { initiated, outcome, failure } = childEnd(e)!;
      end(`c${String(initiated)}`, e, outcome, failure);
    } else if (e.upsertWorkflowSearchAttributesEventAttributes) {
      const fields =
        e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields ?? {};
      const phase = decode(fields[SA.phase.name]);
      const host = decode(fields[SA.host.name]);
      if (typeof phase === 'string') {
        steps.push({
          at,
          kind: 'phase',
          name: phase,
          text: `phase ${phase}${typeof host === 'string' ? `, host ${host}` : ''}`,
        });
      }
    } else if (e.workflowTaskFailedEventAttributes) {
      const a = e.workflowTaskFailedEventAttributes;
      steps.push({
        at,
        kind: 'workflow',
        text: 'workflow task failed',
        outcome: 'failed',
        error: message(a.failure),
      });
    } else {
      const closed = closing(e);
      if (closed) steps.push({ at, kind: 'workflow', ...closed });
    }
  }
  return steps;
}

/** How a child workflow ended (or that it could not start), if this event says so. */
function childEnd(
  e: HistoryEvent,
): { initiated: unknown; outcome: Step['outcome']; failure?: unknown } | undefined {
  const started = e.startChildWorkflowExecutionFailedEventAttributes;
  if (started) {
    return {
      initiated: started.initiatedEventId,
      outcome: 'failed',
      failure: { message: `could not start: ${String(started.cause)}` },
    };
  }
  const ends: Array<
    [{ initiatedEventId?: unknown; failure?: unknown } | null | undefined, Step['outcome']]
  > = [
    [e.childWorkflowExecutionCompletedEventAttributes, 'completed'],
    [e.childWorkflowExecutionFailedEventAttributes, 'failed'],
    [e.childWorkflowExecutionTimedOutEventAttributes, 'timed out'],
    [e.childWorkflowExecutionCanceledEventAttributes, 'canceled'],
    [e.childWorkflowExecutionTerminatedEventAttributes, 'canceled'],
  ];
  const found = ends.find(([a]) => a);
  return (
    found && {
      initiated: found[0]!.initiatedEventId,
      outcome: found[1],
      failure: found[0]!.failure,
    }
  );
}

/** How the run ended (or was asked to), if this event says so. */
function closing(e: HistoryEvent): Omit<Step, 'at' | 'kind'> | undefined {
  if (e.workflowExecutionCompletedEventAttributes)
    return { text: 'completed', outcome: 'completed' };
  if (e.workflowExecutionFailedEventAttributes) {
    return {
      text: 'failed',
      outcome: 'failed',
      error: message(e.workflowExecutionFailedEventAttributes.failure),
    };
  }
  if (e.workflowExecutionTimedOutEventAttributes)
    return { text: 'timed out', outcome: 'timed out' };
  if (e.workflowExecutionCanceledEventAttributes) return { text: 'canceled', outcome: 'canceled' };
  if (e.workflowExecutionCancelRequestedEventAttributes) {
    return {
      text: `cancel requested${reason(e.workflowExecutionCancelRequestedEventAttributes.cause)}`,
    };
  }
  if (e.workflowExecutionTerminatedEventAttributes) {
    return {
      text: `terminated${reason(e.workflowExecutionTerminatedEventAttributes.reason)}`,
      outcome: 'canceled',
    };
  }
  if (e.workflowExecutionContinuedAsNewEventAttributes) {
    return {
      text: `continued as new run ${e.workflowExecutionContinuedAsNewEventAttributes.newExecutionRunId}`,
    };
  }
  return undefined;
}

/** A local activity's marker: its name, attempts and times are in the marker's `data`. */
function localActivity(e: HistoryEvent, at: string): Step | undefined {
  const a = e.markerRecordedEventAttributes!;
  if (a.markerName !== 'core_local_activity') return undefined; // patches, side effects
  const data = decode(a.details?.data?.payloads?.[0]) as
    { activity_type?: string; attempt?: number } | undefined;
  const name = data?.activity_type ?? 'local activity';
  // Recorded when the workflow task that ran it completed: the history's own order and clock.
  return {
    at,
    kind: 'local activity',
    name,
    text: name,
    outcome: a.failure ? 'failed' : 'completed',
    ...(data?.attempt && data.attempt > 1 ? { attempts: data.attempt } : {}),
    ...(a.failure ? { error: message(a.failure) } : {}),
  };
}

function signalWords(name: string, input: unknown): string {
  const arg = (input ?? {}) as {
    state?: string;
    host?: { name?: string };
    reason?: string;
  };
  switch (name) {
    case 'taskRunObserved':
      return `the bridge saw the TaskRun ${arg.state === 'active' ? 'running' : (arg.state ?? 'change')}`;
    case 'slotGranted':
      return `the allocator granted a slot on ${arg.host?.name ?? 'a host'}`;
    case 'slotExhausted':
      return `the allocator has no host for it: ${arg.reason ?? 'no reason given'}`;
    case 'askForSlotAgain':
      return 'the allocator was rebuilt and asks for the slot again';
    default:
      // provisioningObserved, machineObserved, poolObserved, …: the bridge's news of the object
      return name.endsWith('Observed') ? `the bridge saw a change (${name})` : `signal ${name}`;
  }
}

interface Ts {
  seconds?: number | string | { toNumber(): number } | null;
  nanos?: number | null;
}

function tsMs(ts: Ts | null | undefined): number | undefined {
  if (!ts || ts.seconds === undefined || ts.seconds === null) return undefined;
  const s = ts.seconds;
  const secs = typeof s === 'object' ? s.toNumber() : Number(s);
  return secs * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

/** A protobuf Timestamp as ISO 8601; undefined when it is not set. */
export function tsIso(ts: Ts | null | undefined): string | undefined {
  const ms = tsMs(ts);
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/** When the event happened, in epoch milliseconds. */
export function eventMs(e: HistoryEvent): number {
  return tsMs(e.eventTime as Ts) ?? 0;
}

function iso(e: HistoryEvent): string {
  return tsIso(e.eventTime as Ts) ?? new Date(0).toISOString();
}

function seconds(d: Ts | null | undefined): string {
  const ms = tsMs(d) ?? 0;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** A payload's value (JSON or plain); undefined when there is none or it cannot be read. */
export function decode(payload: Payload | null | undefined): unknown {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch {
    return undefined;
  }
}

/** A failure's innermost message: the cause an operator acts on, not the wrapper. */
function message(failure: unknown): string {
  let f = failure as { message?: string | null; cause?: unknown } | null | undefined;
  let text = f?.message ?? 'unknown failure';
  while (f?.cause) {
    f = f.cause as typeof f;
    if (f?.message) text = f.message;
  }
  return text;
}

function reason(text: string | null | undefined): string {
  return text ? `: ${text}` : '';
}
