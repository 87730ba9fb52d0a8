// How a Provisioning's workflow hears of its ClusterOperations; each handler records, and the
// loop acts. Each operation's own workflow asks for a turn (an update answered from the line at
// once), leaves the line when deleted, and says how its turn ended.
import { setHandler } from '@temporalio/workflow';
import {
  operationLeft,
  operationTurnEnded,
  requestOperationTurn,
} from '../../shared/contracts/cluster-operation.js';
import type { LoopState } from './loop-state.js';
import type { LineNow } from './operation-line.js';

/** Takes in the ClusterOperations: their workflows ask for turns and say how each ended. */
export function hearOperations(run: LoopState): void {
  const { operations, teller } = run;
  setHandler(requestOperationTurn, (ticket) => operations.join(ticket, lineNow(run)));
  setHandler(operationLeft, ({ uid }) => operations.leave(uid));
  setHandler(operationTurnEnded, ({ uid, outcome }) => operations.turnEnded(uid, outcome));
  void teller.run();
}

/** What an operation asking to join the line is told of the Provisioning. */
function lineNow(run: LoopState): LineNow {
  return {
    cluster: run.provisioner.cluster || run.provisioner.ref.name,
    waitsFor: run.waitsFor(),
    wait: run.wait(),
    ...(run.latest.deleting ? { closed: 'its Provisioning is being deleted' } : {}),
  };
}
