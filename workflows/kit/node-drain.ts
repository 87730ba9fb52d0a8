// Cordon and drain (docs/architecture.md, "The workflow kit"): a Node's pods are evicted through
// the Eviction API one pass at a time (activities/kubernetes/nodes.ts), passes repeated with
// back-off until none is left or the deadline passes. The family says what a pass that leaves
// pods means to its people, and what a drain past its deadline means: Cluster API goes on with
// the deletion, a rollout degrades the node.
import type { DrainPass, NodeActivities } from '../../activities/kubernetes/nodes.js';
import { untilDeadline } from './retry.js';

export type { DrainPass };

/** The longest wait between two drain passes. */
const MAX_PASS_WAIT_MS = 5_000;

export interface DrainOptions {
  /** The family's proxy of the Node activities. */
  nodeApi: Pick<NodeActivities, 'cordonNode' | 'drainNodeOnce'>;
  node: string;
  /** How long to keep evicting; undefined: until the Node is empty. */
  timeoutMs: number | undefined;
  /** Told of each pass that left pods before the deadline, before the wait for the next one. */
  onPending?: (pass: DrainPass) => void | Promise<void>;
}

/** The pods whose eviction was refused, with why: "pod: reason; …", '' for none. */
export const blockedPods = (pass: DrainPass): string =>
  pass.blocked.map((b) => `${b.pod}: ${b.reason}`).join('; ');

/**
 * Evicts until the Node is empty or the deadline passes, whichever is first, and returns the last
 * pass: `remaining` 0 when it drained. The Node is cordoned already.
 */
export async function drainNode(
  options: DrainOptions,
  startedMs: number = Date.now(),
): Promise<DrainPass> {
  const { nodeApi, node } = options;
  const ended = await untilDeadline(() => nodeApi.drainNodeOnce({ node }), {
    isDone: (pass) => pass.remaining === 0,
    timeoutMs: options.timeoutMs,
    maxWaitMs: MAX_PASS_WAIT_MS,
    startedMs,
    ...(options.onPending ? { onPending: options.onPending } : {}),
  });
  return ended.last;
}

/** Cordons the Node, then drains it (`drainNode`); 'gone' when there is no such Node. */
export async function cordonAndDrain(options: DrainOptions): Promise<DrainPass | 'gone'> {
  const started = Date.now(); // the cordon counts against the deadline
  if ((await options.nodeApi.cordonNode({ name: options.node })) === 'gone') return 'gone';
  return drainNode(options, started);
}
