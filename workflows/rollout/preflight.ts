// Checks made before any node of the pool is touched. A refusal degrades the pool with the reason
// and leaves every node as it is (the checks run again at the next change or wake-up); a warning
// is an Event and the rollout goes on.
//   - The reference must parse (distribution/reference's grammar): what no node could pull is
//     refused here, not found out node by node.
//   - A tag, not a digest, is warned about: every node resolves a tag on its own, so two nodes may
//     end on two different images.
//   - Where the image's registry is one the engine is told about (HOSTFLOW_IMAGE_REGISTRIES), the
//     image must be there, and its labels must fit every node: the kubelet it carries
//     (hostflow.dev/kubelet-version) is the one each node runs, and the image it was built FROM
//     (org.opencontainers.image.base.name) is the base each node runs now (its current image, or
//     the image that one was built from). A layered image swaps the OS, never the kubelet or the
//     base under a node.
import type { PoolNodeDetail } from '../../activities/kubernetes/machine-config-pools.js';
import { innermostMessage } from '../../shared/failures.js';
import { parseImageReference } from '../../shared/image-reference.js';
import { IMAGE_LABELS } from '../../shared/mco-api.js';
import { registryApi } from './activity-proxies.js';
import type { PoolReport } from './pool-report.js';

/** Undefined when the rollout may start; else why not. */
export async function preflight(
  report: PoolReport,
  pool: string,
  image: string,
  nodes: PoolNodeDetail[],
): Promise<string | undefined> {
  const refuse = async (why: string) => {
    await report.event('Warning', 'PreflightFailed', `${pool}: ${why}; no node was touched`);
    return why;
  };
  const ref = parseImageReference(image);
  if ('error' in ref) return refuse(ref.error);
  if (!ref.digest) {
    await report.event(
      'Warning',
      'ImageNotPinned',
      `${image} names a tag: each of the ${nodes.length} nodes resolves it on its own, so they may end on different images; pin it by digest (@sha256:…)`,
    );
  }
  let lookup;
  try {
    lookup = await registryApi.inspectOsImage({ image });
  } catch (err) {
    return refuse(`its registry did not answer: ${innermostMessage(err)}`);
  }
  if (!lookup.checked) {
    await report.event(
      'Normal',
      'ImageNotChecked',
      `${image}: ${lookup.why}; its presence and labels are not checked`,
    );
  } else if (!lookup.found) {
    return refuse(lookup.why);
  } else {
    const kubelet = lookup.labels[IMAGE_LABELS.kubeletVersion];
    if (kubelet) {
      const plain = (v: string | undefined) => (v ?? '').replace(/^v/, '');
      const other = nodes.filter((n) => plain(n.kubeletVersion) !== plain(kubelet));
      if (other.length) {
        const list = other.map((n) => `${n.name} (${n.kubeletVersion ?? 'unknown'})`).join(', ');
        return refuse(`${image} carries kubelet ${kubelet}, but ${list} run another`);
      }
    }
    const base = lookup.labels[IMAGE_LABELS.baseName];
    if (base) {
      const mismatched: string[] = [];
      for (const current of [...new Set(nodes.map((n) => n.currentImage ?? ''))]) {
        const nodeBase = await baseOf(current, base);
        if (nodeBase !== base) {
          const names = nodes.filter((n) => (n.currentImage ?? '') === current).map((n) => n.name);
          mismatched.push(`${names.join(', ')} on ${nodeBase || 'an unknown image'}`);
        }
      }
      if (mismatched.length)
        return refuse(`${image} was built FROM ${base}, but ${mismatched.join('; ')}`);
    }
  }
  await report.event('Normal', 'PreflightPassed', `${image}: the rollout may start`);
  return undefined;
}

/** The base a node's current image stands for: itself if it is `base`, else what it was built FROM. */
async function baseOf(current: string, base: string): Promise<string> {
  if (!current || current === base) return current;
  const lookup = await registryApi.inspectOsImage({ image: current }).catch(() => undefined);
  if (lookup?.checked && lookup.found) return lookup.labels[IMAGE_LABELS.baseName] ?? current;
  return current;
}
