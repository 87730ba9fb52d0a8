// One test file's slice of the shared cluster: its namespaces, host-config, and clients.
import type { V1ConfigMap } from '@kubernetes/client-node';
import { LOCKABLE_LABEL } from '../../locks/api.js';
import { HOST_CONFIG_NAME, LABELS } from '../../platform-config/contract.js';
import type { EngineScope } from './engine.js';
import { kube, temporalClient, uniqueSuffix, type TemporalTarget } from './env.js';
import { TaskRuns } from './taskruns.js';
import { upsert } from '../../local-stack/upsert.js';
import { statusCode } from '../../shared/kube-errors.js';

export interface TestScope extends EngineScope {
  /** The OTP service's records, apart from the engine namespace as an install keeps them. */
  otpNamespace: string;
  kube: ReturnType<typeof kube>;
  temporal: Awaited<ReturnType<typeof temporalClient>>;
  taskRuns: TaskRuns;
  setHostConfig(data: Record<string, string> | undefined): Promise<void>;
  /** Deletes the namespaces; the stack's namespace controller deletes what they hold. */
  dispose(): Promise<void>;
}

export async function createScope(
  prefix: string,
  hostConfig?: Record<string, string>,
  options: { longNamespace?: boolean; temporal?: TemporalTarget } = {},
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
  await k.core.createNamespace({ body: { metadata: { name: scope.namespace } } });
  // The engine's namespace opts in to Locks, as an install does (its Secrets get locked).
  await k.core.createNamespace({
    body: {
      metadata: {
        name: scope.engineNamespace,
        labels: { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value },
      },
    },
  });
  // Written in place (as kubectl apply or edit would), never deleted and re-created: in between,
  // the engine would rightly see no host-config and turn away the builds that arrive.
  const setHostConfig = async (data: Record<string, string> | undefined): Promise<void> => {
    const name = HOST_CONFIG_NAME;
    const namespace = scope.engineNamespace;
    if (data === undefined) {
      await k.core.deleteNamespacedConfigMap({ name, namespace }).catch((err: unknown) => {
        if (statusCode(err) !== 404) throw err;
      });
      return;
    }
    const body: V1ConfigMap = {
      metadata: { name, labels: { [LABELS.multiPlatformConfig]: 'hosts' } },
      data,
    };
    await upsert(
      (n) => k.core.readNamespacedConfigMap({ name: n, namespace }),
      (b) => k.core.createNamespacedConfigMap({ namespace, body: b }),
      (n, b) => k.core.replaceNamespacedConfigMap({ name: n, namespace, body: b }),
      body,
    );
  };
  await setHostConfig(hostConfig);
  const otpNamespace = `${prefix}-otp-${sfx}`;
  await k.core.createNamespace({ body: { metadata: { name: otpNamespace } } });
  const temporal = await temporalClient(options.temporal);
  return {
    ...scope,
    otpNamespace,
    kube: k,
    temporal,
    taskRuns: new TaskRuns(k.core, k.custom, scope.namespace),
    setHostConfig,
    async dispose() {
      await temporal.close();
      for (const name of [scope.namespace, scope.engineNamespace, otpNamespace])
        await k.core.deleteNamespace({ name }).catch(() => undefined);
    },
  };
}
