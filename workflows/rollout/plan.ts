// Which nodes a rollout may start now, as MCO's node controller decides: at most maxUnavailable
// unavailable at once (nodes already NotReady, cordoned or mid-update count), in zone order, never
// a node already on the target image. Pure, so the workflow and its tests share it.
import type { PoolNode } from '../../shared/mco-api.js';

export type { PoolNode };

/** maxUnavailable for a pool of `size` nodes: an int or a percent (rounded down); 0 means 1. */
export function maxUnavailableOf(
  value: number | string | undefined,
  size: number,
): number | { error: string } {
  if (value === undefined || value === null) return 1;
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0)
      return { error: `maxUnavailable ${value} is not a whole number ≥ 0` };
    return Math.max(1, value);
  }
  const percent = /^(\d{1,3})%$/.exec(value.trim());
  if (!percent || Number(percent[1]) > 100) {
    return {
      error: `maxUnavailable "${value}" is neither a whole number nor a percent from 0% to 100%`,
    };
  }
  return Math.max(1, Math.floor((size * Number(percent[1])) / 100));
}

/** Available: Ready, schedulable, and not mid-update. */
export const available = (node: PoolNode): boolean =>
  node.ready && !node.unschedulable && node.state !== 'Working' && node.state !== 'Degraded';

export const onImage = (node: PoolNode, image: string): boolean =>
  node.currentImage === image && node.state !== 'Working' && node.state !== 'Degraded';

/**
 * The nodes to start now: those not on `image`, in zone then name order, as many as the room
 * under `max` leaves after counting the unavailable ones (`busy` are already being updated).
 */
export function nextCandidates(
  nodes: PoolNode[],
  image: string,
  max: number,
  busy: ReadonlySet<string>,
): PoolNode[] {
  const unavailable = nodes.filter((n) => busy.has(n.name) || !available(n)).length;
  const room = max - unavailable;
  if (room <= 0) return [];
  return nodes
    .filter(
      (n) => !busy.has(n.name) && !onImage(n, image) && n.state !== 'Degraded' && available(n),
    )
    .sort((a, b) => a.zone.localeCompare(b.zone) || a.name.localeCompare(b.name))
    .slice(0, room);
}
