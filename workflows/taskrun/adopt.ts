// Taking over a build an earlier run of this workflow served (docs/architecture.md, "Nothing
// leaks when a workflow is terminated by hand"). When an operator terminates a TaskRun's
// workflow, the bridge starts a new run for the TaskRun; if the earlier run had delivered the
// build its Secret, the build may hold that key and be running on the host. The new run must not
// deliver again (that would replace the key): it takes over the slot, waits for the TaskRun to
// end, and cleans up as the earlier run would have.
//
// What is trusted: the earlier run's own record in Temporal (its Host), and a Secret naming one
// of this TaskRun's own build users. A Secret a tenant wrote alone adopts nothing.
import { setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { VM_SLOTS_HOST } from '../../shared/slot-requests.js';
import type { EarlierDelivery, TaskRunOutcome } from '../../shared/contracts/taskrun.js';
import { temporalApi } from './activity-proxies.js';
import { note } from './notes.js';
import { takeSlot } from './slot.js';
import type { TaskRun } from './types.js';

/** Run statuses after which the bridge starts a new run (ALLOW_DUPLICATE_FAILED_ONLY). */
const ENDED_BY_HAND = ['TERMINATED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];

/** The build an earlier run served, when there is one to take over; undefined otherwise. */
export async function adoptEarlierRun(
  run: TaskRun,
  earlier: EarlierDelivery,
  cloud: CloudPlatform | undefined,
): Promise<TaskRunOutcome | undefined> {
  const { workflowId, runId } = workflowInfo();
  const previous = await temporalApi.earlierRun({ workflowId, runId });
  if (!previous?.host || !ENDED_BY_HAND.includes(previous.status)) return undefined;

  const { input, status, pool } = run;
  const dynamic = cloud !== undefined && !cloud.pool;
  setCurrentDetails(
    `TaskRun ${input.namespace}/${input.name} was served by run ${previous.runId}, which ended ` +
      `${previous.status.toLowerCase()}; taking over its build on ${previous.host}.`,
  );
  pool.attempt = 1;
  const answer = await takeSlot(run, {
    summary: `Take over the slot of the build running on ${previous.host}`,
    waitingFor: `the slot of its build on ${previous.host}`,
    eventKey: 'adopt',
    labels: {},
    adopt: dynamic ? VM_SLOTS_HOST : previous.host,
  });
  status.host = previous.host;
  status.user = earlier.user;
  if (dynamic) pool.vms = [previous.host];
  if ('granted' in answer && !dynamic) {
    pool.serving = answer.granted;
    pool.touched = [answer.granted];
  }
  run.publish('Ready');
  await note(
    run,
    'Normal',
    'BuildAdopted',
    `Run ${previous.runId} of this TaskRun's workflow ended ${previous.status.toLowerCase()} after ` +
      `serving it on ${previous.host}; this run keeps the build's key and cleans up when it ends`,
    'adopt',
  );
  return dynamic
    ? { served: 'dynamic', instance: previous.host, user: earlier.user }
    : { served: 'static', host: previous.host, user: earlier.user };
}
