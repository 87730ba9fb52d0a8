// Where a local-platform TaskRun's time goes, read from its workflow history: created (the
// bench's clock) → workflow started (the bridge saw it and Temporal started it) → first workflow
// task started (a worker picked it up) → Secret seen by the bench (the task's local activities
// wrote it). The stages add up to created → Secret. Also how many events and workflow tasks its
// whole life took. (Phase Ready is recorded when that task completes, after the Secret exists.)
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import pLimit from 'p-limit';
import { eventMs, type History } from '../cli/timeline.js';
import { SA } from '../shared/search-attributes.js';
import { summarize } from './stats.js';

type HistoryEvent = NonNullable<History['events']>[number];

export interface TaskRunTimes {
  workflowId: string;
  createdAt: number;
  secretSeenAt: number;
}

interface Stages {
  createdToStarted: number;
  startedToFirstTask: number;
  firstTaskToSecretSeen: number;
  events: number;
  workflowTasks: number;
}

async function stagesOf(client: Client, run: TaskRunTimes): Promise<Stages> {
  const events = (await client.workflow.getHandle(run.workflowId).fetchHistory()).events ?? [];
  const first = (what: string, has: (e: HistoryEvent) => unknown) => {
    const event = events.find(has);
    if (!event) throw new Error(`${run.workflowId}: no ${what} in its history`);
    return eventMs(event);
  };
  const phase = (e: HistoryEvent) => {
    const payload =
      e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.[
        SA.phase.name
      ];
    return payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
  };
  const started = first('start', (e) => e.workflowExecutionStartedEventAttributes);
  const firstTask = first('workflow task', (e) => e.workflowTaskStartedEventAttributes);
  first('phase Ready', (e) => phase(e) === 'Ready'); // it was served, not answered with an error
  return {
    createdToStarted: started - run.createdAt,
    startedToFirstTask: firstTask - started,
    firstTaskToSecretSeen: run.secretSeenAt - firstTask,
    events: events.length,
    workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
  };
}

/** Each stage's percentiles over the burst, and the history's size per TaskRun. */
export async function historyStages(client: Client, runs: TaskRunTimes[]) {
  const limit = pLimit(16);
  const stages = await Promise.all(runs.map((run) => limit(() => stagesOf(client, run))));
  const of = (key: keyof Stages) => stages.map((s) => s[key]);
  return {
    stagesMs: {
      createdToWorkflowStarted: summarize(of('createdToStarted')),
      workflowStartedToFirstTask: summarize(of('startedToFirstTask')),
      firstTaskToSecretSeen: summarize(of('firstTaskToSecretSeen')),
    },
    perTaskRun: { events: summarize(of('events')), workflowTasks: summarize(of('workflowTasks')) },
  };
}
