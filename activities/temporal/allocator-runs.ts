// What an allocator that starts without state needs of its earlier runs: the slots the last one
// left in its memo (shared/contracts/allocator.ts, SlotsSnapshot). Visibility only finds an
// earlier run, whose start was indexed long before; the chain is then followed to its end through
// the runs' own histories, and the memo read from the run itself: neither lags behind.
import type { Client } from '@temporalio/client';
import { quoted } from '../../shared/visibility-query.js';
import {
  SLOTS_MEMO,
  asSlotsSnapshot,
  type SlotsSnapshot,
} from '../../shared/contracts/allocator.js';

/** temporal.api.enums.v1.HistoryEventFilterType: only a run's closing event. */
const HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT = 2;
/** A chain longer than this is not followed further (a run continues-as-new every few hours). */
const MAX_HOPS = 10_000;

export function allocatorRunActivities(client: Client) {
  /** The run `runId` continued as, if it did. */
  async function continuedAs(workflowId: string, runId: string): Promise<string | undefined> {
    const { history } = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      historyEventFilterType: HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
    });
    const close = history?.events?.[0];
    return close?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId || undefined;
  }

  return {
    /**
     * Whether this workflow id ran before this run, and if so the slots its last run kept in its
     * memo (none when that run predates v4 of the allocator, which kept none).
     */
    async lastSlots(input: {
      workflowId: string;
      runId: string;
    }): Promise<{ earlierRun: boolean; slots?: SlotsSnapshot }> {
      const { workflowId } = input;
      const query = `WorkflowId = ${quoted(workflowId)}`;
      let latest: { runId: string; started: number } | undefined;
      for await (const execution of client.workflow.list({ query })) {
        if (execution.runId === input.runId) continue;
        const started = execution.startTime.getTime();
        if (!latest || started > latest.started) latest = { runId: execution.runId, started };
      }
      if (!latest) return { earlierRun: false };
      // Runs it continued as may be too new to be indexed: their histories say which they are.
      let { runId } = latest;
      for (let hop = 0; hop < MAX_HOPS; hop++) {
        const next = await continuedAs(workflowId, runId);
        if (!next || next === input.runId) break;
        runId = next;
      }
      const { memo } = await client.workflow.getHandle(workflowId, runId).describe();
      const slots = asSlotsSnapshot(memo?.[SLOTS_MEMO]);
      return { earlierRun: true, ...(slots ? { slots } : {}) };
    },
  };
}
