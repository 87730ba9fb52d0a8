// Dynamic and dynamic-pool platforms: the `dynamic.<cfg>.*` keys of `host-config` (docs/architecture.md,
// "host-config"), where `<cfg>` is the platform with `/` replaced by `-`. The common keys are parsed
// here; each provider's own keys by the parser registered for its `type`, through `read` and
// `problem` callbacks that name keys without the `dynamic.<cfg>.` prefix. Every problem carries
// its full key and is attributed to its platform, so a bad entry fails only that platform.
import {
  PROVIDER_TYPES,
  type DynamicProvider,
  type ProviderConfigs,
  type ProviderType,
} from './cloud-providers.js';
import {
  configFields,
  type ConfigProblem,
  type ConfigProblemSink,
  type ConfigRead,
  type ProviderParser,
} from './config-fields.js';
import { platformLabel } from './contract.js';
import { printable } from './platform.js';

export { PROVIDER_TYPES, type DynamicProvider, type ProviderType };
export { configFields, type ConfigRead, type ConfigProblemSink, type ProviderParser };

/** What each provider type's config is, as far as the parsers passed in are concerned. */
type Configs = Record<ProviderType, unknown>;

/** A parser per provider type (cloud-providers.ts); a type without one is "not supported yet". */
export type ProviderParsers<C extends Configs = Configs> = {
  [K in ProviderType]?: ProviderParser<C[K]>;
};

/** The types a platform's `type` key may name, as its problems list them: "aws, ibmz or ibmp". */
const TYPE_CHOICES = `${PROVIDER_TYPES.slice(0, -1).join(', ')} or ${PROVIDER_TYPES.at(-1)}`;

export interface DynamicCommon {
  maxInstances: number;
  /** Secret in the engine namespace with the VMs' admin SSH key (key `id_rsa`). */
  sshSecret: string;
  /** Owner tag value of this platform's VMs: its own `instance-tag`, else the global one. */
  instanceTag: string;
  allocationTimeoutSeconds: number;
  checkIntervalSeconds: number;
  /** Absolute command paths build users may run with sudo. */
  sudoCommands: string[];
}

export interface DynamicPlatform<C extends Configs = ProviderConfigs> {
  platform: string;
  /** `<cfg>`: the platform with `/` replaced by `-`, as in its keys. */
  configName: string;
  /** Set for `dynamic-pool-platforms`: VMs shared by `concurrency` builds, retired at `max-age`. */
  pool?: { concurrency: number; maxAgeMinutes: number };
  common: DynamicCommon;
  provider: DynamicProvider<C>;
}

export const DYNAMIC_DEFAULTS = {
  allocationTimeoutSeconds: 600,
  checkIntervalSeconds: 60,
} as const;

const ABSOLUTE_COMMAND = /^\/[A-Za-z0-9._/+-]+$/;
/** Usable as an AWS tag value and an IBM tag: no spaces, at most 128 characters. */
const OWNER_TAG = /^[A-Za-z0-9_.:/=+@-]{1,128}$/;
const MAX_SECONDS = 86_400;

function commonKeys(
  fields: ReturnType<typeof configFields>,
  problem: ConfigProblemSink,
  globalTag: string | undefined,
  globalProblem: (reason: string) => void,
): Partial<DynamicCommon> {
  const own = fields.value('instance-tag');
  let instanceTag = own ?? globalTag;
  if (instanceTag === undefined) {
    problem(
      'instance-tag',
      'required when the global instance-tag is not set: the owner tag value that marks this ' +
        "platform's VMs in the cloud (for example prod-arm64)",
    );
  } else if (!OWNER_TAG.test(instanceTag)) {
    const reason =
      `"${printable(instanceTag)}" is not usable as an owner tag; expected letters, digits and ` +
      '"_ . : / = + @ -", at most 128 characters';
    if (own === undefined) globalProblem(reason);
    else problem('instance-tag', reason);
    instanceTag = undefined;
  }
  const commands = (fields.value('sudo-commands') ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  for (const command of commands.filter((item) => !ABSOLUTE_COMMAND.test(item))) {
    problem(
      'sudo-commands',
      `"${printable(command)}" is not an absolute command path; expected a comma list of paths such as /usr/bin/podman`,
    );
  }
  return {
    maxInstances: fields.integer('max-instances', { min: 1, what: 'the most VMs running at once' }),
    sshSecret: fields.secretName(
      'ssh-secret',
      "the Secret in the engine namespace holding the VMs' admin SSH key (key id_rsa)",
    ),
    instanceTag,
    allocationTimeoutSeconds: fields.integer('allocation-timeout', {
      min: 1,
      max: MAX_SECONDS,
      what: 'seconds to wait for a VM to be reachable',
      default: DYNAMIC_DEFAULTS.allocationTimeoutSeconds,
    }),
    checkIntervalSeconds: fields.integer('check-interval', {
      min: 1,
      max: MAX_SECONDS,
      what: 'seconds between readiness checks',
      default: DYNAMIC_DEFAULTS.checkIntervalSeconds,
    }),
    sudoCommands: commands,
  };
}

const POOL_ONLY = ['concurrency', 'max-concurrency', 'max-age'];

/** Keys the original controller reads that hostflow does not apply: named, never ignored. */
const UNSUPPORTED: Record<string, string> = {
  'spot-price':
    'spot instances are not supported by hostflow; remove the key to launch on-demand instances',
};

export function parseDynamicPlatforms<C extends Configs>(
  data: Record<string, string>,
  config: { dynamicPlatforms: string[]; dynamicPoolPlatforms: string[]; instanceTag?: string },
  parsers: ProviderParsers<C>,
): { platforms: DynamicPlatform<C>[]; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const platforms: DynamicPlatform<C>[] = [];
  const listed = new Map<string, boolean>(); // platform → pool
  for (const platform of config.dynamicPlatforms) listed.set(platform, false);
  for (const platform of config.dynamicPoolPlatforms) {
    if (listed.get(platform) === false) {
      problems.push({
        key: 'dynamic-pool-platforms',
        reason: `${platform} is also listed in dynamic-platforms; list it in only one of them`,
        platform,
      });
    } else listed.set(platform, true);
  }
  const byConfigName = new Map<string, string>();
  for (const platform of listed.keys()) {
    const configName = platformLabel(platform);
    const twin = byConfigName.get(configName);
    if (twin !== undefined) {
      for (const which of [twin, platform]) {
        problems.push({
          key: `dynamic.${configName}.*`,
          reason: `${twin} and ${platform} would share these keys; rename one of the platforms`,
          platform: which,
        });
      }
    }
    byConfigName.set(configName, platform);
  }

  for (const [platform, pool] of listed) {
    const configName = platformLabel(platform);
    const prefix = `dynamic.${configName}.`;
    const own: ConfigProblem[] = [];
    const read = new Set<string>();
    const short = (key: string) => (key.startsWith(prefix) ? key.slice(prefix.length) : key);
    const reader: ConfigRead = (key) => {
      read.add(short(key));
      return data[prefix + short(key)];
    };
    const problem: ConfigProblemSink = (key, reason) =>
      own.push({ key: prefix + short(key), reason, platform });
    const fields = configFields(reader, problem);

    const common = commonKeys(fields, problem, config.instanceTag, (reason) =>
      own.push({ key: 'instance-tag', reason, platform }),
    );
    const poolConfig = pool
      ? {
          concurrency: poolConcurrency(fields, problem),
          maxAgeMinutes: fields.integer('max-age', {
            min: 1,
            max: 1440,
            what: 'minutes a pool VM takes new builds',
          }),
        }
      : undefined;
    const type = fields.text('type', { required: `the cloud provider: ${TYPE_CHOICES}` });
    let provider: DynamicProvider<C> | undefined;
    let knownKeys = false;
    if (type !== undefined && !(PROVIDER_TYPES as readonly string[]).includes(type)) {
      problem('type', `"${printable(type)}" is not valid; expected ${TYPE_CHOICES}`);
    } else if (type !== undefined) {
      const parse = parsers[type as ProviderType];
      if (!parse) problem('type', `type ${type} is not supported yet`);
      else {
        knownKeys = true;
        provider = { type, config: parse(reader, problem) } as DynamicProvider<C>;
      }
    }
    if (knownKeys) {
      for (const key of Object.keys(data).sort()) {
        if (!key.startsWith(prefix) || read.has(key.slice(prefix.length))) continue;
        const name = key.slice(prefix.length);
        problem(printable(name), unknownReason(name, pool, platform, [...read]));
      }
    }
    if (provider && provider.config === undefined && own.length === 0) {
      problem('type', `the ${provider.type} keys could not be parsed`);
    }
    problems.push(...own);
    if (own.length > 0 || !provider) continue;
    platforms.push({
      platform,
      configName,
      ...(poolConfig ? { pool: poolConfig as { concurrency: number; maxAgeMinutes: number } } : {}),
      common: common as DynamicCommon,
      provider,
    });
  }
  return { platforms, problems };
}

/**
 * `concurrency`, or `max-concurrency` as the multi-platform-controller's example ConfigMap spells
 * it.
 */
function poolConcurrency(fields: ReturnType<typeof configFields>, problem: ConfigProblemSink) {
  const rule = { min: 1, max: 8, what: 'the builds each VM runs at once' };
  const alias = fields.value('max-concurrency');
  if (fields.value('concurrency') === undefined && alias !== undefined) {
    return fields.integer('max-concurrency', rule);
  }
  if (alias !== undefined && alias !== fields.value('concurrency')) {
    problem('max-concurrency', 'conflicts with concurrency; set only concurrency');
  }
  return fields.integer('concurrency', rule);
}

function unknownReason(key: string, pool: boolean, platform: string, known: string[]): string {
  if (UNSUPPORTED[key]) return UNSUPPORTED[key];
  if (!pool && POOL_ONLY.includes(key)) {
    return `applies only to dynamic-pool-platforms; remove it or list ${platform} there`;
  }
  const near = known.filter((candidate) => distance(candidate, key) <= 2);
  const hint =
    near.length > 0
      ? `did you mean ${near.join(' or ')}?`
      : `expected one of ${known.sort().join(', ')}`;
  return `unknown key "${printable(key)}"; ${hint}`;
}

function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}
