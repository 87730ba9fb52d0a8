// Kubernetes adapter for a node a rollout updates: cordoned, drained through the Eviction API (so
// PodDisruptionBudgets and Locks are respected: a refused eviction is reported, never forced),
// and uncordoned. One pass per call: the workflow loops.
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { apiMessage, isNotFound, rethrowKube, statusCode } from './errors.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

export interface DrainPass {
  /** Pods still to go (evicted ones count until they are gone). */
  remaining: number;
  evicted: string[];
  /** Pods whose eviction was refused, with the API server's reason (a PDB, usually). */
  blocked: { pod: string; reason: string }[];
}

/** How the Lock policy refuses an eviction: `pods/eviction ns/name is locked by Lock ns/name …`. */
const LOCKED = / is locked by Lock /;

/** Pods a drain leaves alone, as `kubectl drain` does: DaemonSet pods, mirror pods, finished pods. */
function leftAlone(pod: V1Pod): boolean {
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror']) return true;
  if (pod.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet' && o.controller))
    return true;
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

export function createNodeActivities({ core }: { core: CoreV1Api }) {
  return {
    async cordonNode(input: { name: string }): Promise<'cordoned' | 'gone'> {
      return (await setUnschedulable(core, input.name, true)) ? 'cordoned' : 'gone';
    },

    async uncordonNode(input: { name: string }): Promise<'uncordoned' | 'gone'> {
      return (await setUnschedulable(core, input.name, false)) ? 'uncordoned' : 'gone';
    },

    /** Asks once to evict every pod a drain moves; reports what is left and what refused. */
    async drainNodeOnce(input: { node: string }): Promise<DrainPass> {
      let pods;
      try {
        pods = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${input.node}` });
      } catch (err) {
        rethrowKube(`list the pods on Node ${input.node}`, err);
      }
      const pass: DrainPass = { remaining: 0, evicted: [], blocked: [] };
      for (const pod of pods.items) {
        if (leftAlone(pod)) continue;
        const namespace = pod.metadata!.namespace!;
        const name = pod.metadata!.name!;
        const id = `${namespace}/${name}`;
        pass.remaining++;
        if (pod.metadata?.deletionTimestamp) continue; // on its way out already
        try {
          await core.createNamespacedPodEviction({
            name,
            namespace,
            body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
          });
          pass.evicted.push(id);
        } catch (err) {
          if (isNotFound(err)) {
            pass.remaining--;
          } else if (
            statusCode(err) === 429 ||
            statusCode(err) === 500 ||
            (statusCode(err) === 403 && LOCKED.test(apiMessage(err)))
          ) {
            // 429: a PodDisruptionBudget refuses it now; 500: more than one PDB matches; 403: a
            // Lock on the Pod (deploy/locks), which its owner lifts as a PDB would let go.
            pass.blocked.push({ pod: id, reason: apiMessage(err) });
          } else {
            rethrowKube(`evict pod ${id} from Node ${input.node}`, err);
          }
        }
      }
      return pass;
    },
  };
}

/** False when the Node is gone. */
async function setUnschedulable(
  core: CoreV1Api,
  name: string,
  unschedulable: boolean,
): Promise<boolean> {
  try {
    await core.patchNode({ name, body: { spec: { unschedulable } } }, MERGE_PATCH);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    rethrowKube(`${unschedulable ? 'cordon' : 'uncordon'} Node ${name}`, err);
  }
}

export type NodeActivities = ReturnType<typeof createNodeActivities>;
