// The TaskRun workflow's Kubernetes calls. Each is a local activity with a few quick retries;
// past those, a failure retrying can fix (the API server down, a missing permission) is waited
// out on timers, saying so in the workflow's details, instead of failing the TaskRun.
import { setCurrentDetails } from '@temporalio/workflow';
import type { TaskRunMetadataPatch } from '../../activities/kubernetes/taskruns.js';
import { kube } from '../activities.js';
import { metrics } from '../metrics.js';
import { untilDone } from '../retry.js';
import type { TaskRun } from './types.js';

type Metadata = Omit<TaskRunMetadataPatch, 'namespace' | 'name' | 'uid'>;

export function taskRunKube(run: TaskRun) {
  const waitedOut = <T>(what: string, call: () => Promise<T>): Promise<T> =>
    untilDone(call, {
      what,
      report: ({ cause, waitMs, attempt }) => {
        metrics.waits.add(1, { platform: run.input.platform, dependency: 'kubernetes' });
        setCurrentDetails(
          `TaskRun ${run.input.namespace}/${run.input.name} cannot ${what} yet (try ${attempt}, ` +
            `next in ${waitMs / 1000} s): ${cause}`,
        );
      },
    });
  return {
    resolvePlatform: () =>
      waitedOut('read host-config', () =>
        kube.resolveTaskRunPlatform({ ...run.ref, platform: run.input.platform }),
      ),
    patchMetadata: (metadata: Metadata) =>
      waitedOut('label the TaskRun', () => kube.patchTaskRunMetadata({ ...run.ref, ...metadata })),
    writeSecret: (data: Record<string, string>) =>
      waitedOut('write its Secret', () => kube.writeTaskRunSecret({ ...run.ref, data })),
    deleteSecret: () => waitedOut('delete its Secret', () => kube.deleteTaskRunSecret(run.ref)),
  };
}
