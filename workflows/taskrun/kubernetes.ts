// The TaskRun workflow's Kubernetes calls. Each is a local activity with a few quick retries;
// past those, a failure retrying can fix (the API server down, a missing permission) is waited
// out on timers, saying so in the workflow's details, instead of failing the TaskRun. Labels
// and annotations are for dashboards: one that is refused for good is a Warning Event, and the
// build is served all the same.
import { setCurrentDetails } from '@temporalio/workflow';
import { blameOf, innermostMessage } from '../../shared/failures.js';
import type { TaskRunMetadataPatch } from '../../activities/kubernetes/taskruns.js';
import { taskRunApi } from './activity-proxies.js';
import { metrics } from '../metrics.js';
import { isNoLongerWanted, untilDone } from '../kit/retry.js';
import { note } from './notes.js';
import type { TaskRun } from './types.js';

type Metadata = Omit<TaskRunMetadataPatch, 'namespace' | 'name' | 'uid'>;

export function taskRunKube(run: TaskRun) {
  // Serving stops waiting when the TaskRun ends; clean-up (deleteSecret) waits until done.
  const waitedOut = <T>(what: string, call: () => Promise<T>, untilEnded = true): Promise<T> =>
    untilDone(call, {
      what,
      ...(untilEnded ? { stillWanted: () => !run.ended() } : {}),
      report: ({ cause, waitMs, attempt }) => {
        metrics.waits.add(1, { platform: run.input.platform, dependency: 'kubernetes' });
        setCurrentDetails(
          `TaskRun ${run.input.namespace}/${run.input.name} cannot ${what} yet (try ${attempt}, ` +
            `next in ${waitMs / 1000} s): ${cause}`,
        );
      },
    });
  return {
    /** A local platform's answer (its Secret, these labels) is written in the same call. */
    resolvePlatform: (answerLocally: { labels: Record<string, string> }) =>
      waitedOut('read host-config and write its Secret', () =>
        taskRunApi.resolveTaskRunPlatform({
          ...run.ref,
          platform: run.input.platform,
          answerLocally,
        }),
      ),
    patchMetadata: (metadata: Metadata): Promise<unknown> =>
      waitedOut('label the TaskRun', () =>
        taskRunApi.patchTaskRunMetadata({ ...run.ref, ...metadata }),
      ).catch((err: unknown) => {
        if (isNoLongerWanted(err)) return undefined; // nobody looks at an ended TaskRun's labels
        if (blameOf(err) !== 'final') throw err;
        return noteMetadataNotWritten(run, innermostMessage(err));
      }),
    writeSecret: (data: Record<string, string>) =>
      waitedOut('write its Secret', () => taskRunApi.writeTaskRunSecret({ ...run.ref, data })),
    deleteSecret: () =>
      waitedOut('delete its Secret', () => taskRunApi.deleteTaskRunSecret(run.ref), false),
    releaseOriginalFinalizer: () =>
      waitedOut(
        "remove the original controller's finalizer",
        () => taskRunApi.releaseOriginalFinalizer(run.ref),
        false,
      ),
  };
}

/** Labels and annotations refused for good: a Warning Event, and the build is served all the same. */
export function noteMetadataNotWritten(run: TaskRun, reason: string): Promise<void> {
  const message = `Could not write the TaskRun's labels and annotations: ${reason}`;
  return note(run, 'Warning', 'MetadataNotWritten', message, 'metadata');
}
