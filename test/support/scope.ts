// One test file's slice of the shared cluster: its namespaces, host-config, and clients.
import { HOST_CONFIG_NAME, LABELS } from '../../platform-config/contract.js';
import type { EngineScope } from './engine.js';
import { kube, temporalClient, uniqueSuffix } from './env.js';
import { TaskRuns } from './taskruns.js';

export interface TestScope extends EngineScope {
  kube: ReturnType<typeof kube>;
  temporal: Awaited<ReturnType<typeof temporalClient>>;
  taskRuns: TaskRuns;
  setHostConfig(data: Record<string, string> | undefined): Promise<void>;
  /** Deletes the namespaces (no controller-manager here: their objects go with them explicitly). */
  dispose(): Promise<void>;
}

export async function createScope(
  prefix: string,
  hostConfig?: Record<string, string>,
  options: { longNamespace?: boolean } = {},
): Promise<TestScope> {
  const sfx = uniqueSuffix();
  const k = kube();
  const scope: EngineScope = {
    // the longest namespace name there is (63), for tests of names at their limits
    namespace: options.longNamespace
      ? `${prefix}-${'z'.repeat(62 - prefix.length - sfx.length - 1)}-${sfx}`
      : `${prefix}-${sfx}`,
    engineNamespace: `${prefix}-engine-${sfx}`,
    taskQueue: `hostflow-${prefix}-${sfx}`,
  };
  for (const name of [scope.namespace, scope.engineNamespace]) {
    await k.core.createNamespace({ body: { metadata: { name } } });
  }
  const setHostConfig = async (data: Record<string, string> | undefined): Promise<void> => {
    try {
      await k.core.deleteNamespacedConfigMap({
        name: HOST_CONFIG_NAME,
        namespace: scope.engineNamespace,
      });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
    if (data === undefined) return;
    await k.core.createNamespacedConfigMap({
      namespace: scope.engineNamespace,
      body: {
        metadata: {
          name: HOST_CONFIG_NAME,
          labels: { [LABELS.multiPlatformConfig]: 'hosts' },
        },
        data,
      },
    });
  };
  await setHostConfig(hostConfig);
  const temporal = await temporalClient();
  return {
    ...scope,
    kube: k,
    temporal,
    taskRuns: new TaskRuns(k.core, k.custom, scope.namespace),
    setHostConfig,
    async dispose() {
      await temporal.close();
      for (const name of [scope.namespace, scope.engineNamespace]) {
        await deleteAllIn(k, name);
        await k.core.deleteNamespace({ name }).catch(() => undefined);
      }
    },
  };
}

async function deleteAllIn(k: ReturnType<typeof kube>, namespace: string): Promise<void> {
  await k.custom
    .deleteCollectionNamespacedCustomObject({
      group: 'tekton.dev',
      version: 'v1',
      plural: 'taskruns',
      namespace,
    })
    .catch(() => undefined);
  await k.core.deleteCollectionNamespacedSecret({ namespace }).catch(() => undefined);
  await k.core.deleteCollectionNamespacedConfigMap({ namespace }).catch(() => undefined);
}
