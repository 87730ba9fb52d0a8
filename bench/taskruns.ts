// The TaskRuns the benchmarks create: an inline task spec that mounts the contract's Secret.
import { secretNameFor } from '../platform-config/contract.js';

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
