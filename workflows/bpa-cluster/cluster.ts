// One durable workflow per BPA Cluster (`bpa-cluster/<ns>/<name>`): it ties a Provisioning and a
// Software together. The bridge tells it of both as they are; it runs each member's workflow as
// its child (started here, then told what the bridge saw), and keeps the Cluster's status as
// the aggregate of both. Deleting the Cluster deletes both, waits until both are gone (the
// Provisioning resets its hosts first), then lets the Cluster go.
import {
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyLocalActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { BpaRef } from '../../shared/bpa-api.js';
import {
  type BpaClusterInput,
  bpaClusterObserved,
  type BpaClusterObservation,
} from '../../shared/contracts/bpa-cluster.js';
import type { BpaResourceActivities } from '../../activities/kubernetes/bpa-resources.js';
import {
  provisioningObserved,
  provisioningStart,
  type ProvisioningWorkflow,
} from '../../shared/contracts/provisioning.js';
import {
  softwareObserved,
  softwareStart,
  type SoftwareWorkflow,
} from '../../shared/contracts/software.js';
import type { WorkflowStart } from '../../shared/workflow-start.js';
import { innermostMessage } from '../../shared/failures.js';
import { BpaStatus } from '../kit/bpa-report.js';
import { aggregate } from './aggregate.js';
import { MAX_HISTORY } from '../history-limit.js';
import { RESOURCE_CALL } from '../kit/activity-options.js';
import { continueAsNewOnCurrentBuild, newBuildCurrent } from '../kit/new-build.js';

/** A BPA Cluster's finalizer and its members' resources. */
const bpaApi = proxyLocalActivities<BpaResourceActivities>(RESOURCE_CALL);

/** What a Cluster workflow carries into its next run when it continues as new. */
export interface BpaClusterCarried {
  latest: BpaClusterObservation;
  started: string[];
  lastPhase: string;
}

export async function bpaClusterWorkflow({
  namespace,
  name,
  carried,
}: BpaClusterInput & { carried?: BpaClusterCarried }): Promise<void> {
  let latest: BpaClusterObservation | undefined = carried?.latest;
  let changes = 0;
  setHandler(bpaClusterObserved, (seen) => {
    if (latest?.deleting && !seen.deleting) return;
    latest = seen;
    changes++;
  });
  await condition(() => latest !== undefined);
  const ref: BpaRef = { kind: 'Cluster', namespace, name, uid: latest!.uid };
  const report = new BpaStatus(ref);
  if (!carried && !(await bpaApi.addClusterFinalizer(ref))) return; // gone already
  /** Member workflows started by this one (or found running): each is started once. */
  const started = new Set<string>(carried?.started);
  let lastPhase = carried?.lastPhase ?? '';
  let handled = 0;
  for (;;) {
    await condition(() => changes !== handled || historyFull());
    if (changes === handled) {
      await condition(allHandlersFinished);
      await continueAsNewOnCurrentBuild<typeof bpaClusterWorkflow>({
        namespace,
        name,
        carried: { latest: latest!, started: [...started], lastPhase },
      });
    }
    handled = changes;
    const seen = latest!;
    if (!seen.deleting) await startMembers(namespace, seen, started);
    const status = aggregate(seen);
    report.about(
      'clusterName',
      seen.provisioning?.observation.cluster ?? seen.software?.observation.cluster,
    );
    await report.status(`${status.phase}: ${status.conditions[0]!.message}`, { ...status });
    if (status.phase !== lastPhase) {
      lastPhase = status.phase;
      const warn = ['Failed', 'Refused'].includes(status.phase);
      await report.scopedEvent(
        warn ? 'Warning' : 'Normal',
        status.phase,
        status.conditions[0]!.message,
        `${seen.generation}/${handled}`,
      );
    }
    if (!seen.deleting) continue;
    // Deleting: the members go (their own workflows clean up), then the Cluster.
    if (!seen.provisioning && !seen.software) break;
    for (const [kind, member] of [
      ['Software', seen.software],
      ['Provisioning', seen.provisioning],
    ] as const) {
      if (member && !member.observation.deleting) {
        const memberName = kind === 'Software' ? seen.spec.softwareCR! : seen.spec.provisioningCR!;
        await bpaApi.deleteBpaResource({ kind, namespace, name: memberName });
      }
    }
  }
  await bpaApi.removeClusterFinalizer(ref);
}

/** Starts the workflow of each member that exists and has none from here yet, and tells it. */
async function startMembers(
  namespace: string,
  seen: BpaClusterObservation,
  started: Set<string>,
): Promise<void> {
  const { provisioningCR, softwareCR } = seen.spec;
  if (provisioningCR && seen.provisioning) {
    const { observation } = seen.provisioning;
    const how = provisioningStart(namespace, provisioningCR, observation.cluster);
    if (await startMember(how, started))
      await tell(how.workflowId, () =>
        getExternalWorkflowHandle(how.workflowId).signal(provisioningObserved, observation),
      );
  }
  if (softwareCR && seen.software) {
    const { observation } = seen.software;
    const how = softwareStart(namespace, softwareCR, observation.cluster);
    if (await startMember(how, started))
      await tell(how.workflowId, () =>
        getExternalWorkflowHandle(how.workflowId).signal(softwareObserved, observation),
      );
  }
}

/** Starts a member's workflow as a child, once; true when it was just started (or found running). */
async function startMember(
  how: WorkflowStart<ProvisioningWorkflow | SoftwareWorkflow>,
  started: Set<string>,
): Promise<boolean> {
  if (started.has(how.workflowId)) return false;
  started.add(how.workflowId);
  const { workflowType, ...options } = how;
  try {
    await startChild(workflowType, {
      ...options,
      parentClosePolicy: ParentClosePolicy.ABANDON, // a member outlives a Cluster workflow reset
    });
  } catch (err) {
    // Already running: started by the bridge before this Cluster named it. It is told all the
    // same, and the Cluster follows it by its status.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    log.info('member workflow runs on its own', { workflowId: how.workflowId });
  }
  return true;
}

/** Passes on what the bridge saw; a member that just ended is told nothing. */
async function tell(workflowId: string, signal: () => Promise<void>): Promise<void> {
  try {
    await signal();
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('cannot tell a member workflow what was seen', {
      workflowId,
      error: innermostMessage(err),
    });
  }
}

const historyFull = () =>
  workflowInfo().continueAsNewSuggested ||
  workflowInfo().historyLength > MAX_HISTORY.bpaCluster ||
  newBuildCurrent();
