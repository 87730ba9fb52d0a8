// The runner Jobs of one cluster as a test sees them come and go: each run of ansible is a Job of
// its own in the runner namespace, labelled with its cluster, deleted once the worker has read it.
import { CLUSTER_LABEL, clusterLabel } from '../../activities/runner/manifests.js';
import { DEFAULT_RUNNER_NAMESPACE } from '../../shared/runner-settings.js';
import { kube } from './env.js';

export interface SeenRun {
  uid: string;
  name: string;
  /** What it ran, as its annotation says: `kubespray cluster.yml`. */
  what: string;
}

/** The label selector of the runner Jobs and pods of `cluster` (`<namespace>/<name>`). */
export const runnerSelector = (cluster: string) => `${CLUSTER_LABEL}=${clusterLabel(cluster)}`;

/**
 * Polls the Jobs of `cluster` (`<namespace>/<name>`) until stopped: every Job seen, once, in the
 * order first seen. A run lasts seconds at least, so a poll every 200 ms sees each.
 */
export function watchRunnerJobs(cluster: string) {
  const { batch } = kube();
  const seen = new Map<string, SeenRun>();
  let watching = true;
  const polling = (async () => {
    while (watching) {
      const jobs = await batch.listNamespacedJob({
        namespace: DEFAULT_RUNNER_NAMESPACE,
        labelSelector: runnerSelector(cluster),
      });
      for (const job of jobs.items) {
        const uid = job.metadata?.uid ?? '';
        // A Job already going when first seen is an earlier run's, on its way out.
        if (seen.has(uid) || job.metadata?.deletionTimestamp) continue;
        seen.set(uid, {
          uid,
          name: job.metadata?.name ?? '',
          what: job.metadata?.annotations?.['hostflow.dev/what'] ?? '',
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    /** What the Jobs seen so far ran, in order. */
    whats: () => [...seen.values()].map((run) => run.what),
    runs: () => [...seen.values()],
    async stop() {
      watching = false;
      await polling;
    },
  };
}

/** The pods of `cluster`'s runner Jobs now. */
export async function runnerPods(cluster: string) {
  const pods = await kube().core.listNamespacedPod({
    namespace: DEFAULT_RUNNER_NAMESPACE,
    labelSelector: runnerSelector(cluster),
  });
  return pods.items;
}
