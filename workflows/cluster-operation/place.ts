// What a waiting ClusterOperation's status says of its place in line: how many are ahead of it,
// the one running if any, and what it waits for: its turn on the cluster, or why even the first in
// line cannot start yet (its Provisioning's maintenance window, a failed step…). Pure.
import type { OperationPlace } from '../../shared/contracts/cluster-operation.js';

/** The status fields of a place: its position (1 is next), what it says, and (if so) until when. */
export function placeStatus(place: OperationPlace): Record<string, unknown> {
  const { ahead, running, waitsFor, wait } = place;
  const line = running
    ? `ClusterOperation ${running} is running, and ${ahead} operation(s) wait ahead of it`
    : `${ahead} operation(s) ahead of it`;
  return {
    queuePosition: ahead + 1,
    message: wait
      ? `Waiting: ${wait.why}; ${line} on ${waitsFor}.`
      : `Waiting for its turn on ${waitsFor}: ${line}.`,
    ...(wait ? { notBefore: wait.opensAt ? new Date(wait.opensAt).toISOString() : null } : {}),
  };
}
