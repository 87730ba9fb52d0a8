// How a Provisioning's workflow hears of its ClusterOperations; each handler records, and the
// loop acts. Since v19 each operation's own workflow asks for a turn (an update answered from the
// line at once), leaves the line when deleted, and says how its turn ended. Before, the bridge
// reported each operation to the Provisioning's workflow (v18: recorded, then told by the
// teller; earlier: told from the handler, as those runs replay). A run from before v19 asked for
// a turn answers "not yet" and hands over: it continues as new, into a run that gives turns.
import { setHandler } from '@temporalio/workflow';
import {
  clusterOperationObserved,
  operationLeft,
  operationTurnEnded,
  requestOperationTurn,
} from '../../shared/contracts/cluster-operation.js';
import type { LoopState } from './loop-state.js';
import { OperationLine, type LineNow } from './operation-line.js';
import type { Operations } from './operations.js';

/**
 * Takes in the ClusterOperations: since v19 their workflows ask for turns and say how each
 * ended; before, the bridge reported each (v18: recorded, and told by the teller).
 */
export function hearOperations(run: LoopState): void {
  const { operations, teller } = run;
  if (operations instanceof OperationLine) {
    setHandler(requestOperationTurn, (ticket) => operations.join(ticket, lineNow(run)));
    setHandler(operationLeft, ({ uid }) => operations.leave(uid));
    setHandler(operationTurnEnded, ({ uid, outcome }) => operations.turnEnded(uid, outcome));
    void teller!.run();
    return;
  }
  // A run from before v19 gives no turns: the one it continues as does (the loop's handover).
  setHandler(requestOperationTurn, () => {
    run.handoverAsked = true;
    return {
      notYet: `the run of Provisioning ${run.provisioner.ref.name}'s workflow hands over first`,
    };
  });
  if (teller) {
    setHandler(clusterOperationObserved, (seen) => {
      const ahead = operations!.observe(seen);
      if (typeof ahead === 'object') teller.refuse(seen, ahead.refused);
    });
    void teller.run();
    return;
  }
  const line = operations as Operations | undefined;
  // Runs recorded before v18 tell from the handler, beside the loop, as they did.
  /* eslint-disable hostflow/no-await-in-handler -- kept as it ran, for replay; fixed in v18 */
  setHandler(clusterOperationObserved, async (seen) => {
    const ahead = line?.observe(seen);
    if (typeof ahead === 'object') return line!.sayRefused(seen, ahead.refused);
    if (ahead !== undefined) {
      await line!.sayQueued(seen, ahead, run.waitsFor(), run.wait());
    }
    // The line moved: one joined it ahead of others, or one left it. Those behind are told (v12).
    if (ahead !== undefined || seen.deleting) {
      await line?.sayPlaces(run.waitsFor(), () => run.wait());
    }
  });
  /* eslint-enable hostflow/no-await-in-handler */
}

/** What an operation asking to join the line is told of the Provisioning (v19). */
function lineNow(run: LoopState): LineNow {
  return {
    cluster: run.provisioner.cluster || run.provisioner.ref.name,
    waitsFor: run.waitsFor(),
    wait: run.wait(),
    ...(run.latest.deleting ? { closed: 'its Provisioning is being deleted' } : {}),
  };
}
