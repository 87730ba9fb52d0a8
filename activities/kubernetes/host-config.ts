// host-config adapter: reads the ConfigMap live (so edits apply to the next request without
// restarts), resolves platforms, and reports problems as Warning Events on the ConfigMap.
import type { CoreV1Api } from '@kubernetes/client-node';
import { HOST_CONFIG_NAME } from '../../platform-config/contract.js';
import {
  describeProblem,
  parseHostConfig,
  type CloudPlatform,
  type HostConfig,
} from '../../platform-config/host-config.js';
import {
  missingConfigMessage,
  resolvePlatform,
  type PlatformResolution,
} from '../../platform-config/resolve.js';
import { VM_SLOTS_HOST } from '../../shared/slot-requests.js';
import type { Host } from '../../platform-config/host.js';
import type { EarlierDelivery, TaskRunRef } from '../../shared/contracts/taskrun.js';
import { isNotFound, rethrowKube } from './errors.js';
import { recordEvent } from './object-events.js';
import type { KubeClients } from './clients.js';

type ConfigRead =
  { found: true; config: HostConfig; resourceVersion?: string; uid?: string } | { found: false };

/** host-config as it is now, parsed; `found: false` when there is none. */
export async function readHostConfig(
  core: CoreV1Api,
  engineNamespace: string,
): Promise<ConfigRead> {
  try {
    const configMap = await core.readNamespacedConfigMap({
      name: HOST_CONFIG_NAME,
      namespace: engineNamespace,
    });
    return {
      found: true,
      config: parseHostConfig(configMap.data ?? {}),
      resourceVersion: configMap.metadata?.resourceVersion,
      uid: configMap.metadata?.uid,
    };
  } catch (err) {
    if (isNotFound(err)) return { found: false };
    rethrowKube(`read ConfigMap ${engineNamespace}/${HOST_CONFIG_NAME}`, err);
  }
}

/** What resolving a TaskRun's platform may do beside: look for its earlier Secret, answer it. */
export interface TaskRunAnswers {
  earlierDelivery(taskRun: TaskRunRef): Promise<EarlierDelivery | undefined>;
  answerLocalTaskRun(input: TaskRunRef & { labels: Record<string, string> }): Promise<LocalAnswer>;
}

/** A local TaskRun answered while its platform was resolved. */
export interface LocalAnswer {
  /** Why its labels were refused for good; its Secret was written all the same. */
  labelsNotWritten?: string;
}

export function createHostConfigActivities(
  { core, engineNamespace }: KubeClients,
  taskRuns?: TaskRunAnswers,
) {
  const readConfig = () => readHostConfig(core, engineNamespace);

  return {
    /**
     * How the TaskRun's platform is served. Given the TaskRun (`name`, `uid`), a platform served
     * from hosts also says whether the TaskRun already has a served Secret (`earlier`); asked to
     * (`answerLocally`, its labels), a local platform is answered in the same call (`answered`),
     * saving the workflow a round of local activities on the path most TaskRuns take.
     */
    async resolveTaskRunPlatform(input: {
      namespace: string;
      platform: string;
      name?: string;
      uid?: string;
      answerLocally?: { labels: Record<string, string> };
    }): Promise<PlatformResolution & { earlier?: EarlierDelivery; answered?: LocalAnswer }> {
      const read = await readConfig();
      if (!read.found)
        return {
          kind: 'error',
          message: missingConfigMessage(engineNamespace, 'it does not exist'),
        };
      const resolution = resolvePlatform(
        read.config,
        input.platform,
        input.namespace,
        engineNamespace,
      );
      if (resolution.kind === 'error') return resolution;
      if (input.name === undefined || input.uid === undefined || !taskRuns) return resolution;
      const ref = { namespace: input.namespace, name: input.name, uid: input.uid };
      if (resolution.kind === 'local') {
        if (!input.answerLocally) return resolution;
        const { labels } = input.answerLocally;
        return { ...resolution, answered: await taskRuns.answerLocalTaskRun({ ...ref, labels }) };
      }
      const earlier = await taskRuns.earlierDelivery(ref);
      return earlier ? { ...resolution, earlier } : resolution;
    },

    /** The platform's static hosts as the allocator uses them; none when the platform is broken or gone. */
    async loadPlatformHosts(input: { platform: string }): Promise<Host[]> {
      const read = await readConfig();
      if (!read.found) return [];
      if (read.config.problems.some((p) => p.platform === input.platform)) return [];
      const cloud = read.config.dynamic.find((d) => d.platform === input.platform && !d.pool);
      if (cloud) {
        // A dynamic platform's slots are its max-instances: one slot per VM being run.
        const instances = {
          name: VM_SLOTS_HOST,
          address: '-',
          user: '-',
          secret: '-',
          sudoCommands: [],
        };
        return [{ ...instances, concurrency: cloud.common.maxInstances }];
      }
      return read.config.staticHosts
        .filter((h) => h.platform === input.platform)
        .map(({ name, address, user, secret, concurrency, sudoCommands, serves }) => ({
          name,
          address,
          user,
          secret,
          concurrency,
          sudoCommands,
          ...(serves ? { serves } : {}),
        }));
    },

    /** The platform's dynamic-pool config; undefined when it is not a (valid) pool platform. */
    async loadCloudPool(input: {
      platform: string;
    }): Promise<{ cloud: CloudPlatform; additionalTags: Record<string, string> } | undefined> {
      const read = await readConfig();
      if (!read.found || read.config.problems.some((p) => p.platform === input.platform)) {
        return undefined;
      }
      const cloud = read.config.dynamic.find((d) => d.platform === input.platform && d.pool);
      return cloud && { cloud, additionalTags: read.config.additionalInstanceTags };
    },

    /** Every valid static host of every platform: where garbage collection looks for users. */
    async loadStaticHosts(): Promise<Host[]> {
      const read = await readConfig();
      if (!read.found) return [];
      return read.config.staticHosts.map(({ platform: _platform, ...host }) => host);
    },

    /** Every valid dynamic and dynamic-pool platform: what garbage collection looks through. */
    async loadCloudPlatforms(): Promise<CloudPlatform[]> {
      const read = await readConfig();
      if (!read.found) return [];
      const broken = new Set(read.config.problems.map((p) => p.platform));
      return read.config.dynamic.filter((d) => !broken.has(d.platform));
    },

    /**
     * One Warning Event per problem on the ConfigMap. Event names derive from the problem, so
     * a retry or a second report of the same problem does not repeat it.
     */
    async reportHostConfigProblems(): Promise<{ problems: string[] }> {
      const read = await readConfig();
      if (!read.found)
        return { problems: [missingConfigMessage(engineNamespace, 'it does not exist')] };
      const problems = read.config.problems.map(describeProblem);
      for (const problem of problems) {
        await recordEvent(core, {
          involvedObject: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: HOST_CONFIG_NAME,
            namespace: engineNamespace,
            uid: read.uid,
            resourceVersion: read.resourceVersion,
          },
          type: 'Warning',
          reason: 'InvalidHostConfig',
          message: problem,
          dedupKey: `${read.resourceVersion}\n${problem}`,
        });
      }
      return { problems };
    },
  };
}

export type HostConfigActivities = ReturnType<typeof createHostConfigActivities>;
