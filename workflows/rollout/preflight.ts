// Checks made before any node of the pool is touched. A refusal degrades the pool with the reason
// and leaves every node as it is; a warning is an Event and the rollout goes on.
//   - The reference must parse (distribution/reference's grammar): what no node could pull is
//     refused here, not found out node by node.
//   - A tag, not a digest, is warned about: every node resolves a tag on its own, so two nodes may
//     end on two different images.
import type { PoolNodeDetail } from '../../activities/kubernetes/machine-config-pools.js';
import { parseImageReference } from '../../shared/image-reference.js';
import type { PoolReport } from './pool-report.js';

/** Undefined when the rollout may start; else why not. */
export async function preflight(
  report: PoolReport,
  pool: string,
  image: string,
  nodes: PoolNodeDetail[],
): Promise<string | undefined> {
  const ref = parseImageReference(image);
  if ('error' in ref) {
    await report.event('Warning', 'PreflightFailed', `${pool}: ${ref.error}; no node was touched`);
    return ref.error;
  }
  if (!ref.digest) {
    await report.event(
      'Warning',
      'ImageNotPinned',
      `${image} names a tag: each of the ${nodes.length} nodes resolves it on its own, so they may end on different images; pin it by digest (@sha256:…)`,
    );
  }
  await report.event('Normal', 'PreflightPassed', `${image}: the rollout may start`);
  return undefined;
}
