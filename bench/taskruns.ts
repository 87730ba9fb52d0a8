// The TaskRuns the benchmarks create (an inline task spec that mounts the contract's Secret),
// and how they finish.
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { secretNameFor } from '../platform-config/contract.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

export function benchTaskRun(name: string, namespace: string, platform: string) {
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'TaskRun',
    metadata: { name, namespace },
    spec: {
      params: [{ name: 'PLATFORM', value: platform }],
      taskSpec: {
        steps: [{ name: 'build', image: 'busybox', script: 'true' }],
        volumes: [{ name: 'ssh', secret: { secretName: secretNameFor(name) } }],
      },
    },
  };
}

/** Marks the TaskRun Succeeded, as Tekton would when its build ends. */
export async function completeTaskRun(
  custom: CustomObjectsApi,
  namespace: string,
  name: string,
): Promise<void> {
  await custom.patchNamespacedCustomObjectStatus(
    {
      ...TASKRUN_API,
      namespace,
      name,
      body: { status: { conditions: [{ type: 'Succeeded', status: 'True' }] } },
    },
    MERGE_PATCH,
  );
}
