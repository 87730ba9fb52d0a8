// Temporal adapter: what workflows cannot do themselves (send updates, look at other
// workflows), done from the worker with its client.
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { WORKFLOW_ID, claimById } from '../../platform-config/contract.js';
import {
  hostConfigChanged,
  requestSlot,
  type RequestOutcome,
  type SlotRequestInput,
} from '../../shared/messages.js';
import { KIND, SA } from '../../shared/search-attributes.js';

export interface TemporalDeps {
  client: Client;
  taskQueue: string;
}

export function createTemporalActivities({ client, taskQueue }: TemporalDeps) {
  return {
    /**
     * Asks the platform's allocator for a slot, starting the allocator if it is not running.
     * The update ID is the request ID, so a retried activity gets the same answer.
     */
    async requestSlot(input: SlotRequestInput & { platform: string }): Promise<RequestOutcome> {
      const { platform, ...request } = input;
      const startAllocator = new WithStartWorkflowOperation('allocatorWorkflow', {
        workflowId: WORKFLOW_ID.allocator(platform),
        taskQueue,
        args: [{ platform }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: SA.kind, value: KIND.allocator },
          { key: SA.platform, value: platform },
        ],
        staticSummary: `Allocator for ${platform}`,
        staticDetails:
          `Owns the host slots of platform \`${platform}\`: serves TaskRuns first come, first served, ` +
          'never over capacity, and takes hosts that keep failing out of rotation until a probe succeeds.',
      });
      return client.workflow.executeUpdateWithStart(requestSlot, {
        updateId: request.requestId,
        args: [request],
        startWorkflowOperation: startAllocator,
      });
    },

    /** Which of these workflows are no longer running (or never existed). */
    async closedWorkflows(input: { workflowIds: string[] }): Promise<string[]> {
      const closed: string[] = [];
      for (const workflowId of new Set(input.workflowIds)) {
        try {
          const { status } = await client.workflow.getHandle(workflowId).describe();
          if (status.name !== 'RUNNING') closed.push(workflowId);
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) closed.push(workflowId);
          else throw err;
        }
      }
      return closed;
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
