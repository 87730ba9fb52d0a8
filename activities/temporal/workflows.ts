// Temporal adapter: what workflows cannot do themselves (send updates, look at other
// workflows), done from the worker with its client.
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { claimById } from '../../platform-config/contract.js';
import { WORKFLOW_ID, parseTaskRunWorkflowId } from '../../shared/workflow-ids.js';
import {
  allocatorStart,
  hostConfigChanged,
  hostOutcome,
  releaseSlot,
  requestSlot,
  type RequestOutcome,
  type SlotRequestInput,
} from '../../shared/contracts/allocator.js';
import type { TaskRunRef } from '../../shared/contracts/taskrun.js';
import {
  requestOperationTurn,
  type OperationTicket,
  type TurnAnswer,
} from '../../shared/contracts/cluster-operation.js';
import { KIND, SA } from '../../shared/search-attributes.js';
import { allocatorRunActivities } from './allocator-runs.js';
import { quoted } from '../../shared/visibility-query.js';

export interface TemporalDeps {
  client: Client;
  taskQueue: string;
  /** The engine's resync period: how often allocators look for holders that are gone. */
  resyncSeconds?: number;
}

export function createTemporalActivities({ client, taskQueue, resyncSeconds }: TemporalDeps) {
  return {
    ...allocatorRunActivities(client),

    /**
     * Asks the platform's allocator for a slot, starting the allocator if it is not running.
     * The update ID is the request ID, so a retried activity gets the same answer.
     */
    async requestSlot(input: SlotRequestInput & { platform: string }): Promise<RequestOutcome> {
      const { platform, ...request } = input;
      const { workflowType, ...start } = allocatorStart(platform, resyncSeconds);
      const startAllocator = new WithStartWorkflowOperation(workflowType, {
        ...start,
        workflowIdConflictPolicy: 'USE_EXISTING',
        taskQueue,
      });
      return client.workflow.executeUpdateWithStart(requestSlot, {
        updateId: request.requestId,
        args: [request],
        startWorkflowOperation: startAllocator,
      });
    },

    /**
     * Asks a Provisioning's workflow for a ClusterOperation's turn on its cluster (an update,
     * which a workflow cannot send). A Provisioning without a running workflow, or whose run
     * predates turns, is asked again by the activity's retries.
     */
    async requestOperationTurn(input: {
      namespace: string;
      provisioning: string;
      ticket: OperationTicket;
    }): Promise<Exclude<TurnAnswer, { notYet: string }>> {
      const { namespace, provisioning, ticket } = input;
      const handle = client.workflow.getHandle(WORKFLOW_ID.provisioning(namespace, provisioning));
      let answer: TurnAnswer;
      try {
        // One answer per asking run: a retried activity gets the answer its first try got.
        const asker = Context.current().info.workflowExecution?.runId ?? '';
        const updateId = `turn/${ticket.uid}/${asker}`;
        answer = await handle.executeUpdate(requestOperationTurn, { args: [ticket], updateId });
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        throw ApplicationFailure.retryable(
          `Provisioning ${namespace}/${provisioning} has no running workflow: create it, or ` +
            'see why its workflow ended (hostflow describe provisioning)',
          'NoProvisioningWorkflow',
        );
      }
      if ('notYet' in answer) throw ApplicationFailure.retryable(answer.notYet, 'NotYet');
      return answer;
    },

    /**
     * Which of these workflows (or, given a run id, which of these runs) are no longer running,
     * or never existed. Answers `<workflow id>` or `<workflow id>#<run id>` for each.
     */
    async closedWorkflows(input: {
      workflowIds?: string[];
      executions?: Array<{ workflowId: string; runId?: string }>;
    }): Promise<string[]> {
      const executions = [
        ...(input.workflowIds ?? []).map((workflowId) => ({ workflowId, runId: undefined })),
        ...(input.executions ?? []),
      ];
      const closed = new Set<string>();
      for (const { workflowId, runId } of executions) {
        const key = runId ? `${workflowId}#${runId}` : workflowId;
        if (closed.has(key)) continue;
        try {
          const { status } = await client.workflow.getHandle(workflowId, runId).describe();
          if (status.name === 'CONTINUED_AS_NEW') {
            // The run handed what it held to its successor: closed only once the chain ends.
            const latest = await client.workflow.getHandle(workflowId).describe();
            if (latest.status.name !== 'RUNNING') closed.add(key);
          } else if (status.name !== 'RUNNING') closed.add(key);
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) closed.add(key);
          else throw err;
        }
      }
      return [...closed];
    },

    /**
     * Whether a workflow id had a run before this one (of any status): an allocator that had
     * none cannot have granted a slot, so there is nothing to rebuild.
     */
    async hadEarlierRun(input: { workflowId: string; runId: string }): Promise<boolean> {
      const query = `WorkflowId = ${quoted(input.workflowId)}`;
      for await (const execution of client.workflow.list({ query })) {
        if (execution.runId !== input.runId) return true;
      }
      return false;
    },

    /**
     * The running TaskRun workflows of a platform on this task queue, with their phase and the
     * host they hold: what an allocator that starts without state rebuilds its holders from.
     */
    async platformTaskRuns(input: {
      platform: string;
    }): Promise<Array<{ workflowId: string; runId: string; phase?: string; host?: string }>> {
      // Machines hold slots too (their request ids outlive continue-as-new: no run id).
      const query =
        `${SA.kind.name} IN ('${KIND.taskRun}', '${KIND.machine}') AND ExecutionStatus = 'Running' AND ` +
        `TaskQueue = ${quoted(taskQueue)} AND ${SA.platform.name} = ${quoted(input.platform)}`;
      const found: Array<{ workflowId: string; runId: string; phase?: string; host?: string }> = [];
      for await (const execution of client.workflow.list({ query })) {
        const host = execution.typedSearchAttributes.get(SA.host);
        const machine = execution.typedSearchAttributes.get(SA.kind) === KIND.machine;
        // A Machine holds its slot exactly while its Host is set, whatever its phase.
        const phase = machine
          ? host
            ? 'Holding'
            : 'Waiting'
          : execution.typedSearchAttributes.get(SA.phase);
        found.push({
          workflowId: execution.workflowId,
          runId: machine ? '' : execution.runId,
          ...(phase ? { phase } : {}),
          ...(host ? { host } : {}),
        });
      }
      return found;
    },

    /**
     * What running workflows claim, i.e. the VMs GC must spare: launch keys (CloudLaunches), and
     * as `adopted:<id>` every host serving a running TaskRun, so the VMs of a pool whose
     * allocator is being rebuilt stay safe while their builds run.
     */
    async claimedLaunches(): Promise<string[]> {
      const running = `ExecutionStatus = 'Running'`;
      const claims: string[] = [];
      const launches = `${SA.cloudLaunches.name} IS NOT NULL AND ${running}`;
      for await (const execution of client.workflow.list({ query: launches })) {
        claims.push(...(execution.typedSearchAttributes.get(SA.cloudLaunches) ?? []));
      }
      const serving = `${SA.kind.name} = '${KIND.taskRun}' AND ${SA.host.name} IS NOT NULL AND ${running}`;
      for await (const execution of client.workflow.list({ query: serving })) {
        const host = execution.typedSearchAttributes.get(SA.host);
        if (host) claims.push(claimById(host));
      }
      return claims;
    },

    /**
     * Running TaskRun workflows served by these hosts (their Host search attribute): the slot
     * holders of a pool allocator rebuilding its state after a crash.
     */
    async holdersOfHosts(input: {
      platform: string;
      hosts: string[];
    }): Promise<Array<{ workflowId: string; host: string }>> {
      if (input.hosts.length === 0) return [];
      const hosts = input.hosts.map((h) => `'${h.replace(/'/g, '')}'`).join(', ');
      const query =
        `${SA.kind.name} = '${KIND.taskRun}' AND ExecutionStatus = 'Running' AND ` +
        `${SA.platform.name} = '${input.platform.replace(/'/g, '')}' AND ${SA.host.name} IN (${hosts})`;
      const holders: Array<{ workflowId: string; host: string }> = [];
      for await (const execution of client.workflow.list({ query })) {
        const host = execution.typedSearchAttributes.get(SA.host);
        if (host) holders.push({ workflowId: execution.workflowId, host });
      }
      return holders;
    },

    /**
     * The latest closed run of this workflow id other than `runId`, with the host it held:
     * whether an operator ended a run that had served the TaskRun (see taskrun/adopt.ts).
     */
    async earlierRun(input: {
      workflowId: string;
      runId: string;
    }): Promise<{ runId: string; status: string; host?: string } | undefined> {
      const query =
        `WorkflowId = ${quoted(input.workflowId)} AND RunId != ${quoted(input.runId)} ` +
        `AND ExecutionStatus != 'Running'`;
      let latest: { runId: string; status: string; host?: string; started: number } | undefined;
      for await (const execution of client.workflow.list({ query })) {
        const started = execution.startTime.getTime();
        if (latest && latest.started >= started) continue;
        const host = execution.typedSearchAttributes.get(SA.host);
        latest = {
          runId: execution.runId,
          status: execution.status.name,
          started,
          ...(host ? { host } : {}),
        };
      }
      return latest && { runId: latest.runId, status: latest.status, host: latest.host };
    },

    /** Every running TaskRun workflow (any task queue): its TaskRun and the host it holds. */
    async runningTaskRuns(): Promise<Array<TaskRunRef & { host?: string }>> {
      const query = `${SA.kind.name} = '${KIND.taskRun}' AND ExecutionStatus = 'Running'`;
      const found: Array<TaskRunRef & { host?: string }> = [];
      for await (const execution of client.workflow.list({ query })) {
        const taskRun = parseTaskRunWorkflowId(execution.workflowId);
        if (!taskRun) continue;
        const host = execution.typedSearchAttributes.get(SA.host);
        found.push({ ...taskRun, ...(host ? { host } : {}) });
      }
      return found;
    },

    /**
     * TaskRun workflows of this task queue that ended without finishing their work (terminated,
     * failed, timed out or cancelled): the only ones that may have left a Secret behind, since a
     * run that completes has deleted its own. Each TaskRun once, as long as Temporal keeps it.
     */
    async endedTaskRuns(): Promise<TaskRunRef[]> {
      const query =
        `${SA.kind.name} = '${KIND.taskRun}' AND TaskQueue = ${quoted(taskQueue)} AND ` +
        `ExecutionStatus IN (${ENDED_UNFINISHED.map(quoted).join(', ')})`;
      const found = new Map<string, TaskRunRef>();
      for await (const execution of client.workflow.list({ query })) {
        const taskRun = parseTaskRunWorkflowId(execution.workflowId);
        if (taskRun) found.set(taskRun.uid, taskRun);
      }
      return [...found.values()];
    },

    /**
     * Tells a platform's allocator how a host did, or gives a slot back: from the worker, so the
     * asking workflow does it within its workflow task instead of waiting a task for a signal's
     * result. Best effort: an allocator that is gone rebuilds its holders from the running
     * workflows, so there is nothing to tell it. Telling it twice changes nothing.
     */
    async tellAllocator(
      input: { platform: string } & (
        { hostOutcome: { host: string; ok: boolean } } | { releaseSlot: { requestId: string } }
      ),
    ): Promise<void> {
      const handle = client.workflow.getHandle(WORKFLOW_ID.allocator(input.platform));
      try {
        if ('hostOutcome' in input) await handle.signal(hostOutcome, input.hostOutcome);
        else await handle.signal(releaseSlot, input.releaseSlot);
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },

    /** Tells every running allocator of this task queue that host-config changed. */
    async notifyAllocators(): Promise<number> {
      const query = `${SA.kind.name} = '${KIND.allocator}' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'`;
      let count = 0;
      for await (const execution of client.workflow.list({ query })) {
        try {
          await client.workflow.getHandle(execution.workflowId).signal(hostConfigChanged);
          count++;
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
      }
      return count;
    },
  };
}

export type TemporalActivities = ReturnType<typeof createTemporalActivities>;

/** How a workflow ends without having cleaned up (visibility's ExecutionStatus values). */
const ENDED_UNFINISHED = ['Terminated', 'Failed', 'TimedOut', 'Canceled'];
