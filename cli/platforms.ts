// The platforms host-config declares, by how they are served, as the on-call commands read it:
// the same ConfigMap and parser the engine uses, read once with the operator's kubeconfig.
import { CoreV1Api } from '@kubernetes/client-node';
import { HOST_CONFIG_NAME, LOCALHOST } from '../platform-config/contract.js';
import {
  describeProblem,
  parseHostConfig,
  type HostConfig,
} from '../platform-config/host-config.js';
import { statusCode } from '../shared/kube-errors.js';
import { loadKubeConfig, type Settings } from '../runtime/settings.js';

export type PlatformKind = 'static' | 'dynamic' | 'pool' | 'local';

export interface DeclaredPlatforms {
  /** Platform → how host-config serves it. */
  kinds: Map<string, PlatformKind>;
  /** Static platforms: the slots their configured hosts offer. */
  staticCapacity: Map<string, number>;
  /** host-config's own problems, as the engine reports them (`key: reason`). */
  problems: string[];
  /** No ConfigMap at all: nothing but `local` and `localhost` is served. */
  missing: boolean;
}

/** `local` and `localhost` run in the pod whatever host-config says. */
const ALWAYS_LOCAL = ['local', LOCALHOST];

export async function readDeclaredPlatforms(
  settings: Settings,
  flags: { kubeconfig?: string; context?: string },
): Promise<DeclaredPlatforms> {
  const kc = loadKubeConfig(
    flags.kubeconfig ?? settings.KUBECONFIG,
    flags.context ?? settings.HOSTFLOW_KUBE_CONTEXT,
    { context: '--context or HOSTFLOW_KUBE_CONTEXT', file: '--kubeconfig or KUBECONFIG' },
  );
  const namespace = settings.HOSTFLOW_NAMESPACE;
  let data: Record<string, string> | undefined;
  try {
    const configMap = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: HOST_CONFIG_NAME, namespace });
    data = configMap.data ?? {};
  } catch (err) {
    if (statusCode(err) !== 404) {
      throw new Error(
        `cannot read ConfigMap ${namespace}/${HOST_CONFIG_NAME} (HOSTFLOW_NAMESPACE): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
  return declared(parseHostConfig(data), data === undefined);
}

function declared(config: HostConfig, missing: boolean): DeclaredPlatforms {
  const kinds = new Map<string, PlatformKind>();
  const staticCapacity = new Map<string, number>();
  for (const host of config.staticHosts) {
    kinds.set(host.platform, 'static');
    staticCapacity.set(host.platform, (staticCapacity.get(host.platform) ?? 0) + host.concurrency);
  }
  // The engine's order (platform-config/resolve.ts): local, then cloud, then static hosts.
  for (const cloud of config.dynamic) kinds.set(cloud.platform, cloud.pool ? 'pool' : 'dynamic');
  for (const platform of [...ALWAYS_LOCAL, ...config.localPlatforms]) kinds.set(platform, 'local');
  return { kinds, staticCapacity, problems: config.problems.map(describeProblem), missing };
}
