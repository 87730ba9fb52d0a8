// Benchmark: the static allocator alone. Sends BENCH_REQUESTS slot requests (400) to
// `allocator/<platform>` as the worker's requestSlot activity does (an Update with start),
// BENCH_INFLIGHT (8) at a time, over 4 sshd hosts × 8 slots (more hosts when more are in
// flight); each granted slot is released at once (the releaseSlot signal), so slots never run
// out. Prints grants per second, the latency of a request, and the requests Temporal refused. No TaskRun workflows exist, so nothing else
// competes for Temporal: this is the allocator's own rate, not a burst's. Target (issue 14):
// ≥ 100 grants per second. Temporal accepts at most 10 updates in flight per workflow (its
// history.maxInFlightUpdates): BENCH_INFLIGHT=64 shows what happens above that.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import pLimit from 'p-limit';
import { createTemporalActivities } from '../activities/temporal/workflows.js';
import { TASK_QUEUE } from '../shared/task-queue.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { releaseSlot } from '../shared/contracts/allocator.js';
import { slotRequestId, workflowIdOfRequest } from '../shared/slot-requests.js';
import { startBenchStack } from './stack.js';
import { perSecond, summarize } from './stats.js';

const PLATFORM = 'linux/bench';
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 400);
const IN_FLIGHT = Number(process.env.BENCH_INFLIGHT ?? 8);
const SLOTS_PER_HOST = 8; // the most a static host may have
// Enough hosts that a request rarely finds every slot granted and not yet released (it would be
// queued, and its grant signalled to a requester that does not exist here).
const HOSTS = Math.max(4, Math.ceil((2 * IN_FLIGHT) / SLOTS_PER_HOST));

async function main(): Promise<void> {
  if (!Number.isInteger(REQUESTS) || REQUESTS < HOSTS || !Number.isInteger(IN_FLIGHT)) {
    throw new Error(`BENCH_REQUESTS (≥ ${HOSTS}) and BENCH_INFLIGHT must be whole numbers`);
  }
  const stack = await startBenchStack(
    {},
    { sshHosts: HOSTS, platform: PLATFORM, concurrency: SLOTS_PER_HOST },
  );
  const connection = await Connection.connect({ address: stack.temporal.address });
  try {
    const client = new Client({ connection, namespace: stack.temporal.namespace });
    const { requestSlot } = createTemporalActivities({ client, taskQueue: TASK_QUEUE });
    const requestIds = Array.from({ length: REQUESTS }, (_, i) =>
      // A run id of Temporal's form: the allocator signals a queued request's run by it.
      slotRequestId(`bench-request-${i}`, 0, randomUUID()),
    );
    const ask = (requestId: string) =>
      requestSlot({
        platform: PLATFORM,
        requestId,
        workflowId: workflowIdOfRequest(requestId),
        excluded: [],
      });
    await ask(slotRequestId('bench-warm-up', 0, randomUUID())); // starts the allocator, reads its config

    const allocator = client.workflow.getHandle(WORKFLOW_ID.allocator(PLATFORM));
    const firstRunId = (await allocator.describe()).runId;
    const limit = pLimit(IN_FLIGHT);
    const latency: number[] = [];
    let granted = 0;
    const failures: string[] = [];
    const outcomes: Record<string, number> = {};
    const start = performance.now();
    await Promise.all(
      requestIds.map((requestId) =>
        limit(async () => {
          const asked = performance.now();
          try {
            const outcome = await ask(requestId);
            latency.push(performance.now() - asked);
            if (outcome.status === 'granted') {
              granted++;
              await allocator.signal(releaseSlot, { requestId });
            }
            outcomes[outcome.status] = (outcomes[outcome.status] ?? 0) + 1;
            if (outcome.status === 'exhausted') failures.push(outcome.reason);
          } catch (err) {
            failures.push((err as Error).message);
          }
        }),
      ),
    );
    const grantMs = performance.now() - start;

    const history = await allocator.fetchHistory();
    const { priority, runId } = await allocator.describe();
    console.log(
      JSON.stringify({
        bench: 'allocator-grants',
        requests: REQUESTS,
        inFlight: IN_FLIGHT,
        slots: HOSTS * SLOTS_PER_HOST,
        granted,
        outcomes,
        failed: failures.length,
        ...(failures.length ? { firstFailure: failures[0] } : {}),
        grantsPerSec: perSecond(granted, grantMs),
        requestMs: summarize(latency),
        allocatorHistoryEvents: history.events?.length ?? 0,
        // Kept across continue-as-new (over 5,000 events; BENCH_REQUESTS=1200 shows it).
        allocator: { priorityKey: priority?.priorityKey, continuedAsNew: runId !== firstRunId },
        targets: { grantsPerSec: 100 },
      }),
    );
  } finally {
    await connection.close();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(`bench allocator-grants: ${(err as Error).message}`);
  process.exit(1);
});
