// Fuzz: 10,000 generated host-configs (fast-check, seeded). Parsing never throws, every problem
// names the key it concerns and says why, in text safe to show; resolving any PLATFORM from any
// namespace against any of them never throws either, and an error always says what to do.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { parseHostConfig } from '../platform-config/host-config.js';
import { printable } from '../platform-config/platform.js';
import { resolvePlatform } from '../platform-config/resolve.js';

const GLOBAL_KEYS = [
  'local-platforms',
  'dynamic-platforms',
  'dynamic-pool-platforms',
  'instance-tag',
  'additional-instance-tags',
  'allowed-namespaces',
];
const HOST_FIELDS = ['address', 'user', 'platform', 'secret', 'concurrency', 'sudo-commands'];
const DYNAMIC_FIELDS = [
  'type',
  'max-instances',
  'ssh-secret',
  'instance-tag',
  'allocation-timeout',
  'check-interval',
  'sudo-commands',
  'concurrency',
  'max-age',
  'region',
  'ami',
  'instance-type',
  'key-name',
  'aws-secret',
  'security-group',
  'security-group-id',
  'subnet-id',
  'instance-profile-name',
  'instance-profile-arn',
  'strict-public-address',
  'disk',
  'iops',
  'throughput',
  'user-data',
  'tenancy',
  'host-resource-group-arn',
  'license-configuration-arn',
  'key',
  'subnet',
  'vpc',
  'image-id',
  'secret',
  'url',
  'profile',
  'private-ip',
  'image',
  'crn',
  'network',
  'system',
  'cores',
  'memory',
];

const hostile = fc.constantFrom(
  '',
  ' ',
  '$(touch /tmp/pwned)',
  "'; rm -rf / #",
  '`id`',
  'a\nb',
  '\u0000',
  'ü/ß',
  '🙂/🙃',
  '../../etc/passwd',
  'x'.repeat(5000),
  '-1',
  '0',
  '9',
  '1e3',
  'NaN',
  '(',
  '[z-a]',
  '.*',
  'linux/arm64,linux/AMD64,,',
  'k=v,broken,=x',
);
const plausible = fc.constantFrom(
  'linux/arm64',
  'linux/amd64',
  'linux/ppc64le',
  'linux/s390x',
  'aws',
  'ibmz',
  'ibmp',
  '10.0.0.1',
  '::1',
  'host.example.com',
  'ec2-user',
  'admin-key',
  '4',
  '8',
  '100',
  'us-east-1',
  'ami-0123456789abcdef0',
  'crn:v1:bluemix:public:power-iaas:dal10:a/abc:1234-5678::',
  '/usr/bin/podman,/usr/bin/buildah',
  'team-.*,ci',
  'team=builds',
  'true',
);
const value = fc.oneof(
  { weight: 3, arbitrary: plausible },
  { weight: 2, arbitrary: hostile },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
);
const name = fc.oneof(
  fc.constantFrom('h1', 'ppc1', 'a.b', 'x_y', 'UPPER', '-bad', 'bad-', 'a'.repeat(70), ''),
  fc.string({ maxLength: 12 }),
);
const platformName = fc.constantFrom('linux-arm64', 'linux-amd64', 'linux-s390x', 'linux-x', 'a-b');
const key = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...GLOBAL_KEYS) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(name, fc.oneof(fc.constantFrom(...HOST_FIELDS), fc.string({ maxLength: 8 })))
      .map(([n, f]) => `host.${n}.${f}`),
  },
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        platformName,
        fc.oneof(fc.constantFrom(...DYNAMIC_FIELDS), fc.string({ maxLength: 8 })),
      )
      .map(([p, f]) => `dynamic.${p}.${f}`),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 16 }) },
);
const hostConfig = fc
  .array(fc.tuple(key, value), { maxLength: 40 })
  .map((entries) => Object.fromEntries(entries));

/**
 * Where a problem may point: a global key, a key of the config (as messages quote it), or a
 * field under one of its host.<name>. or dynamic.<cfg>. prefixes (a required field left out).
 */
function keyIsAbout(problemKey: string, data: Record<string, string>): boolean {
  const keys = Object.keys(data);
  if (GLOBAL_KEYS.includes(problemKey) || keys.some((k) => printable(k) === problemKey)) {
    return true;
  }
  const prefixes = keys.flatMap((k) => {
    if (k.startsWith('host.')) {
      const rest = k.slice('host.'.length);
      return [`host.${printable(rest.slice(0, rest.lastIndexOf('.')))}.`];
    }
    return k.startsWith('dynamic.') ? [k.slice(0, k.lastIndexOf('.') + 1)] : [];
  });
  const listed = ['dynamic-platforms', 'dynamic-pool-platforms'].flatMap((k) =>
    (data[k] ?? '').split(',').map((p) => `dynamic.${p.trim().replace(/\//g, '-')}.`),
  );
  return [...prefixes, ...listed].some((prefix) => problemKey.startsWith(prefix));
}

/** Shown to people, written into Events and Secrets: no raw control characters. */
const hasControlCharacter = (text: string) => [...text].some((c) => c.charCodeAt(0) < 0x20);

describe('host-config fuzz', () => {
  it('parses 10,000 generated configs without a crash, every problem naming its key', () => {
    let problems = 0;
    fc.assert(
      fc.property(hostConfig, (data) => {
        const config = parseHostConfig(data);
        // (plain checks, not expect(): a hundred thousand of them)
        for (const problem of config.problems) {
          problems++;
          const shown = `${problem.key} ${problem.reason}`;
          if (!problem.key || !problem.reason) throw new Error(`empty problem: ${shown}`);
          // shown to people and written into Events and Secrets: no raw control characters
          if (hasControlCharacter(shown)) throw new Error(`control character in: ${shown}`);
          if (!keyIsAbout(problem.key, data)) {
            throw new Error(`problem key ${JSON.stringify(problem.key)} is not about this config`);
          }
        }
      }),
      { numRuns: 10_000, seed: 20261123 },
    );
    console.log(`10,000 host-configs parsed; ${problems} problems, each with its key`);
  });

  it('resolves any PLATFORM from any namespace against any config without a crash', () => {
    const platform = fc.oneof(
      fc.constantFrom('local', 'localhost', 'linux/x86_64', 'linux/arm64', 'linux/AMD64', 'a/b/c'),
      hostile,
      fc.string({ maxLength: 30 }),
    );
    const namespace = fc.oneof(
      fc.constantFrom('team-a', 'ci', 'default'),
      fc.string({ maxLength: 63 }),
    );
    fc.assert(
      fc.property(hostConfig, platform, namespace, (data, p, ns) => {
        const resolution = resolvePlatform(parseHostConfig(data), p, ns, 'mpc');
        if (resolution.kind === 'error') {
          expect(resolution.message).toMatch(/\.\s*[A-Z][^.]*\.$|operators/);
          expect(hasControlCharacter(resolution.message)).toBe(false);
        }
      }),
      { numRuns: 2_000, seed: 20261124 },
    );
  });
});
