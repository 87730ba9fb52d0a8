// Which strategy serves a platform, in the original's order: local, dynamic, pool, static hosts.
import { HOST_CONFIG_NAME } from './contract.js';
import {
  describeProblem,
  type CloudPlatform,
  type HostConfig,
  type StaticHost,
} from './host-config.js';
import { checkPlatform, printable } from './platform.js';
import { namespaceMatcher } from './namespace-patterns.js';

export type PlatformResolution =
  | { kind: 'local' }
  /** Served from the `host.<name>.*` hosts whose platform this is (never empty). */
  | { kind: 'static'; hosts: StaticHost[] }
  /** One fresh VM per TaskRun (dynamic-platforms). */
  | { kind: 'dynamic'; cloud: CloudPlatform; additionalTags: Record<string, string> }
  /** A slot on a shared, auto-scaled VM (dynamic-pool-platforms); the allocator runs the VMs. */
  | { kind: 'pool'; cloud: CloudPlatform }
  | { kind: 'error'; message: string };

/** Platforms that mean "run in the pod" without appearing in `local-platforms`. */
const IMPLICITLY_LOCAL: readonly string[] = ['local', 'localhost'];

export function resolvePlatform(
  config: HostConfig,
  platform: string,
  namespace: string,
  engineNamespace: string,
): PlatformResolution {
  const where = `ConfigMap ${engineNamespace}/${HOST_CONFIG_NAME}`;
  const check = checkPlatform(platform);
  if (!check.ok) {
    return { kind: 'error', message: `${check.reason}. Fix the PLATFORM param of the TaskRun.` };
  }
  if (config.namespacesRestricted && !namespaceMatcher(config.allowedNamespaces)(namespace)) {
    const broken = config.problems.filter((p) => p.key === 'allowed-namespaces');
    return {
      kind: 'error',
      message:
        `namespace "${printable(namespace)}" may not use multi-platform hosts: it matches no ` +
        `valid allowed-namespaces entry in ${where}` +
        (broken.length ? ` (${broken.map(describeProblem).join('; ')})` : '') +
        '. Ask the platform operators to allow it.',
    };
  }
  const globalProblems = config.problems.filter((p) => p.platform === undefined);
  const ownProblems = config.problems.filter((p) => p.platform === platform);
  if (IMPLICITLY_LOCAL.includes(platform) || config.localPlatforms.includes(platform)) {
    return { kind: 'local' };
  }
  if (ownProblems.length > 0) {
    return {
      kind: 'error',
      message:
        `platform ${platform} is misconfigured in ${where}: ` +
        `${ownProblems.map(describeProblem).join('; ')}. Ask the platform operators to fix it.`,
    };
  }
  const cloud = config.dynamic.find((d) => d.platform === platform);
  if (cloud && !cloud.pool) {
    return { kind: 'dynamic', cloud, additionalTags: config.additionalInstanceTags };
  }
  if (cloud) return { kind: 'pool', cloud };
  const hosts = config.staticHosts.filter((host) => host.platform === platform);
  if (hosts.length > 0) return { kind: 'static', hosts };
  const hint =
    globalProblems.length > 0
      ? ` (${where} also has problems: ${globalProblems.map(describeProblem).join('; ')})`
      : '';
  return {
    kind: 'error',
    message:
      `platform ${platform} is not configured in ${where}${hint}. ` +
      'Use a configured platform, or ask the platform operators to add it to local-platforms, ' +
      'dynamic-platforms, dynamic-pool-platforms or a host.<name>.platform entry.',
  };
}

export function missingConfigMessage(engineNamespace: string, detail: string): string {
  return (
    `cannot read ConfigMap ${engineNamespace}/${HOST_CONFIG_NAME}: ${detail}. ` +
    `Create it (label build.appstudio.redhat.com/multi-platform-config) in namespace ${engineNamespace}.`
  );
}
