// Parses the `host-config` ConfigMap (docs/architecture.md, "host-config") into typed config.
// Pure code shared by the bridge, activities and workflows. Every problem names its key and
// reason, and a problem only affects the platforms it belongs to.
import { z } from 'zod';
import { checkPlatform, printable } from './platform.js';
import {
  CLOUD_PROVIDERS,
  PROVIDER_TYPES,
  type ProviderConfigs,
  type ProviderType,
} from './cloud-providers.js';
import { parseDynamicPlatforms, type DynamicPlatform, type ProviderParsers } from './dynamic.js';
import { parseStaticHosts, type StaticHost } from './static-hosts.js';
import { patternProblem } from './namespace-patterns.js';
import type { ConfigProblem } from './config-fields.js';

/** A dynamic or dynamic-pool platform with its provider's config. */
export type CloudPlatform = DynamicPlatform<ProviderConfigs>;

export type { StaticHost } from './static-hosts.js';

export type { ConfigProblem };

export interface HostConfig {
  localPlatforms: string[];
  dynamicPlatforms: string[];
  dynamicPoolPlatforms: string[];
  instanceTag?: string;
  additionalInstanceTags: Record<string, string>;
  /** The valid regex sources of allowed-namespaces. */
  allowedNamespaces: string[];
  /**
   * Whether allowed-namespaces lists anything, valid or not: then only namespaces matching a
   * valid entry may use hosts. A list of broken entries allows nothing (fail closed).
   */
  namespacesRestricted: boolean;
  /** `require-host-keys: "true"`: static hosts must name their SSH host key (no first-use trust). */
  requireHostKeys: boolean;
  /** Valid `host.<name>.*` entries only; the invalid ones are in `problems`. */
  staticHosts: StaticHost[];
  /** `dynamic.<cfg>.*` of the platforms listed in dynamic-platforms and dynamic-pool-platforms. */
  dynamic: CloudPlatform[];
  problems: ConfigProblem[];
}

const commaList = z
  .string()
  .optional()
  .transform((value) =>
    (value ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

const GLOBAL_KEYS = {
  'local-platforms': commaList,
  'dynamic-platforms': commaList,
  'dynamic-pool-platforms': commaList,
  'allowed-namespaces': commaList,
  'additional-instance-tags': commaList,
  'instance-tag': z.string().trim().optional(),
  'require-host-keys': z.string().trim().optional(),
} as const;

/** Every registered provider's parser, by type. */
const PROVIDER_PARSERS = Object.fromEntries(
  PROVIDER_TYPES.map((type: ProviderType) => [type, CLOUD_PROVIDERS[type].parse]),
) as ProviderParsers<ProviderConfigs>;

export function parseHostConfig(data: Record<string, string> | undefined): HostConfig {
  const problems: ConfigProblem[] = [];
  const globals = z.object(GLOBAL_KEYS).parse(data ?? {});

  const platformList = (key: string, values: string[]): string[] =>
    values.filter((platform) => {
      const check = checkPlatform(platform);
      if (!check.ok) problems.push({ key, reason: check.reason });
      return check.ok;
    });

  const additionalInstanceTags: Record<string, string> = {};
  for (const pair of globals['additional-instance-tags']) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      problems.push({
        key: 'additional-instance-tags',
        reason: `"${printable(pair)}" is not of the form key=value`,
      });
      continue;
    }
    additionalInstanceTags[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }

  const allowedNamespaces = globals['allowed-namespaces'].filter((source) => {
    const problem = patternProblem(source);
    if (problem) {
      problems.push({
        key: 'allowed-namespaces',
        reason: `"${printable(source)}" is not a valid regular expression: ${problem}`,
      });
    }
    return !problem;
  });

  const localPlatforms = platformList('local-platforms', globals['local-platforms']);
  const dynamicPlatforms = platformList('dynamic-platforms', globals['dynamic-platforms']);
  const dynamicPoolPlatforms = platformList(
    'dynamic-pool-platforms',
    globals['dynamic-pool-platforms'],
  );
  const requireKeys = globals['require-host-keys'];
  if (requireKeys !== undefined && requireKeys !== 'true' && requireKeys !== 'false') {
    problems.push({
      key: 'require-host-keys',
      reason: `"${printable(requireKeys)}" is not "true" or "false"; taken as "true" (fail closed)`,
    });
  }
  const requireHostKeys = requireKeys !== undefined && requireKeys !== 'false';
  const staticHosts = parseStaticHosts(data ?? {}, requireHostKeys);
  problems.push(...staticHosts.problems);
  const dynamic = parseDynamicPlatforms(
    data ?? {},
    { dynamicPlatforms, dynamicPoolPlatforms, instanceTag: globals['instance-tag'] || undefined },
    PROVIDER_PARSERS,
  );
  problems.push(...dynamic.problems);

  return {
    localPlatforms,
    dynamicPlatforms,
    dynamicPoolPlatforms,
    instanceTag: globals['instance-tag'] || undefined,
    additionalInstanceTags,
    allowedNamespaces,
    namespacesRestricted: globals['allowed-namespaces'].length > 0,
    requireHostKeys,
    staticHosts: staticHosts.hosts,
    dynamic: dynamic.platforms,
    problems,
  };
}

export function describeProblem(problem: ConfigProblem): string {
  return `${problem.key}: ${problem.reason}`;
}
