// A TaskRun's build pods, once its Secret is written. Tekton makes the pod as soon as the TaskRun
// exists, before any Secret: the kubelet fails the Secret's mount and tries again with a growing
// back-off (up to about 2 minutes between tries). The original controller then changes the pod
// (its assigned-host annotation) so that the kubelet looks at it again; hostflow annotates each
// of the TaskRun's pods that has not ended likewise. Measured on kubelet v1.34 it does not bring
// the mount forward (the back-off is the volume's, kept across pod updates): docs/taskruns.md.
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { ANNOTATIONS, TEKTON_TASKRUN_LABEL } from '../../platform-config/contract.js';
import type { TaskRunRef } from '../../shared/contracts/taskrun.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';
import { kubeErrorLine } from '../../shared/kube-errors.js';
import { isNotFound } from './errors.js';

/**
 * Tekton makes one pod per TaskRun (another only if that one is lost): more than this are a
 * tenant's own, and the rest are left as they are, so a namespace full of them costs a bounded call.
 */
const MAX_PODS = 4;
/** Pods a list returns at most: a namespace that labels thousands of its own is not read whole. */
const LIST_LIMIT = 50;

/** The longest label value: a TaskRun of a longer name has no pod labelled with it to find. */
const MAX_LABEL_VALUE = 63;

/** Owned by this TaskRun (by uid: a label anyone in the namespace can set proves nothing). */
const ownedBy = (pod: V1Pod, ref: TaskRunRef) =>
  (pod.metadata?.ownerReferences ?? []).some((o) => o.kind === 'TaskRun' && o.uid === ref.uid);

/** Not ended nor going: one that already started costs a patch, and the build loses nothing. */
const live = (pod: V1Pod) =>
  !['Succeeded', 'Failed'].includes(pod.status?.phase ?? '') && !pod.metadata?.deletionTimestamp;

/**
 * Annotates the TaskRun's live pods with the written Secret's resourceVersion. Best effort:
 * the build is served without it (the kubelet mounts the Secret at its next try), so a refusal
 * is returned as a reason for the caller to log, never thrown.
 */
export async function nudgeBuildPods(
  core: CoreV1Api,
  ref: TaskRunRef,
  secretVersion: string,
): Promise<string | undefined> {
  if (ref.name.length > MAX_LABEL_VALUE) return undefined;
  let pods: V1Pod[];
  try {
    const list = await core.listNamespacedPod({
      namespace: ref.namespace,
      labelSelector: `${TEKTON_TASKRUN_LABEL}=${ref.name}`,
      limit: LIST_LIMIT,
    });
    pods = list.items.filter((pod) => ownedBy(pod, ref) && live(pod)).slice(0, MAX_PODS);
  } catch (err) {
    return `list the pods of TaskRun ${ref.namespace}/${ref.name}: ${kubeErrorLine(err)}`;
  }
  const refused: string[] = [];
  for (const pod of pods) {
    const name = pod.metadata!.name!;
    if (pod.metadata?.annotations?.[ANNOTATIONS.secretWritten] === secretVersion) continue;
    try {
      await core.patchNamespacedPod(
        {
          name,
          namespace: ref.namespace,
          body: { metadata: { annotations: { [ANNOTATIONS.secretWritten]: secretVersion } } },
        },
        MERGE_PATCH,
      );
    } catch (err) {
      if (!isNotFound(err)) refused.push(`annotate pod ${name}: ${kubeErrorLine(err)}`);
    }
  }
  return refused.length ? refused.join('; ') : undefined;
}
