// One ClusterOperation from its creation (`cluster-operation/<ns>/<name>`), started by the
// bridge when the object appears: check the spec before anything else; ask its Provisioning's
// workflow for a turn on the cluster, and wait, saying its place in line as the Provisioning tells
// it; run its steps when the turn comes (operation.ts); tell the Provisioning how the turn ended.
// It is the one writer of its status, from Pending to the end. Deleted while it waits, it leaves
// the line; while it runs, its playbook is stopped. A retry (the annotation on a Failed one) is a
// new run, which the Provisioning tells where the failed run stopped.
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  log,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { checkOperationLimits } from '../../shared/cluster-operation-limits.js';
import {
  clusterOperationSeen,
  operationDropped,
  operationLeft,
  operationPlaceMoved,
  operationTurn,
  operationTurnEnded,
  type ClusterOperationOutcome,
  type ClusterOperationRequest,
  type OperationCluster,
  type OperationPlace,
} from '../../shared/contracts/cluster-operation.js';
import { innermostMessage } from '../../shared/failures.js';
import { SA } from '../../shared/search-attributes.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { operationTurns } from './activity-proxies.js';
import { runOperation } from './operation.js';
import { OperationReport } from './report.js';
import { checkOperationSpec } from '../../shared/cluster-operation-api.js';

/** What it hears while it waits and runs; the handlers only record, the workflow acts. */
class Heard {
  deleting = false;
  place: OperationPlace | undefined;
  turn: { target: OperationCluster; from?: string } | undefined;
  dropped: string | undefined;

  constructor() {
    setHandler(clusterOperationSeen, (seen) => {
      if (seen.deleting) this.deleting = true;
    });
    setHandler(operationPlaceMoved, (place) => {
      this.place = place;
    });
    setHandler(operationTurn, (turn) => {
      this.turn = turn;
    });
    setHandler(operationDropped, ({ why }) => {
      this.dropped = why;
    });
  }
}

export async function clusterOperationLifecycleWorkflow(
  request: ClusterOperationRequest,
): Promise<ClusterOperationOutcome | undefined> {
  const { namespace, name, uid, spec, retry } = request;
  const heard = new Heard();
  const provisioning = spec.provisioning ?? '';
  const report = new OperationReport(
    { namespace, name, uid },
    `of Provisioning ${provisioning || '(none)'}`,
  );
  // Its spec is checked before it waits: a bad one is refused at once, not when its turn comes.
  const limits = checkOperationLimits(spec, request.specBytes);
  const checked = limits.length
    ? { ok: false as const, problems: limits }
    : checkOperationSpec(spec);
  // The retry it was started for is kept, so the bridge starts no other run for it.
  const refuse = (why: string) => report.refused(`Nothing was run: ${why}`, retry ? { retry } : {});
  if (!checked.ok) return refuse(checked.problems.join('; '));

  const ticket = {
    name,
    uid,
    createdAt: request.createdAt,
    action: spec.action ?? '',
    ...(retry ? { retry } : {}),
  };
  const answer = await operationTurns.requestOperationTurn({ namespace, provisioning, ticket });
  // Started again for a turn it had (the bridge saw the object before its end was written).
  if ('ran' in answer) return undefined;
  if ('refused' in answer) return refuse(answer.refused);
  report.cluster = answer.cluster;
  upsertSearchAttributes([{ key: SA.clusterName, value: answer.cluster }]);

  // Waits in line, saying its place each time it moves, until its turn comes.
  let place: OperationPlace = answer;
  for (;;) {
    await report.waiting(place);
    await condition(() => heard.deleting || !!heard.dropped || !!heard.turn || !!heard.place);
    if (heard.turn) break;
    if (heard.deleting) {
      await tellProvisioning(request, (p) => p.signal(operationLeft, { uid }));
      return undefined;
    }
    if (heard.dropped) return refuse(`${heard.dropped}.`);
    place = heard.place!;
    heard.place = undefined;
  }

  const { target, from } = heard.turn;
  const input = {
    namespace,
    name,
    uid,
    spec,
    target,
    ...(retry ? { resume: { from: from ?? '', retry } } : {}),
  };
  let outcome: ClusterOperationOutcome | undefined;
  try {
    outcome = await runOperation(input, report, checked.steps, () => heard.deleting);
  } finally {
    // The turn ends however the run did, so the next in line goes (an operator's cancel too).
    await tellProvisioning(request, (p) =>
      p.signal(operationTurnEnded, { uid, outcome: outcome ?? cancelledOutcome }),
    );
  }
  return outcome;
}

/** What the Provisioning hears when the run itself ended without an outcome. */
const cancelledOutcome: ClusterOperationOutcome = {
  phase: 'Failed',
  message: 'its workflow was cancelled',
};

/** Signals its Provisioning's workflow, even while cancelled; one that is gone need not hear. */
async function tellProvisioning(
  request: ClusterOperationRequest,
  send: (p: ReturnType<typeof getExternalWorkflowHandle>) => Promise<void>,
): Promise<void> {
  const id = WORKFLOW_ID.provisioning(request.namespace, request.spec.provisioning ?? '');
  await CancellationScope.nonCancellable(async () => {
    try {
      await send(getExternalWorkflowHandle(id));
    } catch (err) {
      log.warn('could not tell the Provisioning', { workflowId: id, error: innermostMessage(err) });
    }
  });
}
