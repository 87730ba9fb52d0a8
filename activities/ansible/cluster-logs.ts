// The worker's copies of a cluster's runs' logs (cluster-run.ts keeps them as
// `<workDir>/.logs/<ns>/<cluster>/<name>.<run>.log`): removed with the ClusterOperations they
// belonged to. A path comes from an operation's status, which a tenant can write, so only a run's
// log in that cluster's own folder is removed; any other path is left alone.
import { rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

const RUN_LOG = /^[-_a-zA-Z0-9]+\.[0-9a-f]{8}\.log$/;

export function createClusterLogActivities({ workDir }: { workDir: string }) {
  return {
    /** Removes those of `logs` that are runs' logs in the cluster's directory; says which. */
    async removeClusterLogs(input: {
      namespace: string;
      cluster: string;
      logs: string[];
    }): Promise<string[]> {
      const dir = resolve(join(workDir, '.logs', input.namespace, input.cluster));
      const removed: string[] = [];
      for (const log of input.logs) {
        const path = resolve(log);
        if (dirname(path) !== dir || !RUN_LOG.test(basename(path))) continue;
        rmSync(path, { force: true });
        removed.push(path);
      }
      return removed;
    },
  };
}

export type ClusterLogActivities = ReturnType<typeof createClusterLogActivities>;
