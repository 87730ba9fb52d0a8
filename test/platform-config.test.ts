// Pure logic: PLATFORM validation, host-config parsing and platform resolution.
import { describe, expect, it } from '@jest/globals';
import { parseHostConfig } from '../platform-config/host-config.js';
import { checkPlatform } from '../platform-config/platform.js';
import { resolvePlatform } from '../platform-config/resolve.js';

describe('PLATFORM validation', () => {
  it.each([
    'local',
    'localhost',
    'linux/x86_64',
    'linux/amd64',
    'linux/arm64',
    'linux-m4xlarge/amd64',
    'a/b',
  ])('accepts %s', (platform) => expect(checkPlatform(platform)).toEqual({ ok: true }));

  it.each([
    ['linux/AMD64', /not a valid name/],
    ['linux', /must have the form os\/arch/],
    ['linux/', /not a valid name/],
    ['a/b/c', /must have the form os\/arch/],
    ['linux/1arch', /not a valid name/],
    [`linux/${'a'.repeat(64)}`, /at most 63 characters/],
    ['linux/arm64;$(id)', /not a valid name/],
    ['', /must have the form/],
  ])('rejects %j', (platform, reason) => {
    const check = checkPlatform(platform);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toMatch(reason);
  });

  it('quotes control characters instead of passing them through', () => {
    const check = checkPlatform('linux/\u001b[31mred');
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).not.toContain('\u001b');
  });
});

describe('host-config parsing', () => {
  it('reads the global keys', () => {
    const config = parseHostConfig({
      'local-platforms': ' linux/amd64 , linux/x86_64,',
      'dynamic-platforms': 'linux/arm64',
      'dynamic-pool-platforms': 'linux-m4xlarge/amd64',
      'instance-tag': 'prod',
      'additional-instance-tags': 'team=build, cost-center = 42',
      'allowed-namespaces': 'team-.*,ci',
    });
    expect(config).toEqual({
      localPlatforms: ['linux/amd64', 'linux/x86_64'],
      dynamicPlatforms: ['linux/arm64'],
      dynamicPoolPlatforms: ['linux-m4xlarge/amd64'],
      instanceTag: 'prod',
      additionalInstanceTags: { team: 'build', 'cost-center': '42' },
      allowedNamespaces: ['team-.*', 'ci'],
      staticHosts: [],
      problems: [],
    });
  });

  it('names the key and reason of every problem, and keeps the valid entries', () => {
    const config = parseHostConfig({
      'local-platforms': 'linux/amd64,Linux/ARM',
      'additional-instance-tags': 'ok=1,broken',
      'allowed-namespaces': '(,fine',
    });
    expect(config.localPlatforms).toEqual(['linux/amd64']);
    expect(config.allowedNamespaces).toEqual(['fine']);
    expect(config.additionalInstanceTags).toEqual({ ok: '1' });
    expect(config.problems.map((p) => p.key).sort()).toEqual([
      'additional-instance-tags',
      'allowed-namespaces',
      'local-platforms',
    ]);
    expect(config.problems.find((p) => p.key === 'local-platforms')?.reason).toContain(
      '"Linux/ARM"',
    );
    expect(config.problems.find((p) => p.key === 'additional-instance-tags')?.reason).toContain(
      'key=value',
    );
    expect(config.problems.find((p) => p.key === 'allowed-namespaces')?.reason).toContain(
      'regular expression',
    );
  });

  it('treats a missing ConfigMap body as empty', () => {
    expect(parseHostConfig(undefined).localPlatforms).toEqual([]);
  });
});

describe('platform resolution', () => {
  const config = parseHostConfig({
    'local-platforms': 'linux/amd64',
    'dynamic-platforms': 'linux/arm64',
  });
  const resolve = (platform: string, namespace = 'builds') =>
    resolvePlatform(config, platform, namespace, 'mpc');

  it('serves configured and implicit local platforms locally', () => {
    expect(resolve('linux/amd64')).toEqual({ kind: 'local' });
    expect(resolve('local')).toEqual({ kind: 'local' });
    expect(resolve('localhost')).toEqual({ kind: 'local' });
  });

  it('explains an unknown platform and where to configure it', () => {
    const result = resolve('linux/s390x');
    expect(result.kind).toBe('error');
    if (result.kind === 'error') {
      expect(result.message).toContain(
        'platform linux/s390x is not configured in ConfigMap mpc/host-config',
      );
      expect(result.message).toContain('host.<name>.platform');
    }
  });

  it('says plainly that dynamic platforms are not served yet', () => {
    const result = resolve('linux/arm64');
    expect(result.kind === 'error' && result.message).toMatch(
      /dynamic platform .* does not serve yet/,
    );
  });

  it('enforces allowed-namespaces as whole-name regexes', () => {
    const restricted = parseHostConfig({
      'local-platforms': 'linux/amd64',
      'allowed-namespaces': 'team-.*',
    });
    expect(resolvePlatform(restricted, 'linux/amd64', 'team-a', 'mpc')).toEqual({ kind: 'local' });
    const denied = resolvePlatform(restricted, 'linux/amd64', 'xteam-a', 'mpc');
    expect(denied.kind === 'error' && denied.message).toContain('may not use multi-platform hosts');
  });
});

// The seed's example ConfigMap (multi-platform-controller.txt, "configuration").
const SEED_CONFIG: Record<string, string> = {
  'local-platforms': 'linux/amd64',
  'dynamic-platforms': 'linux/arm64',
  'dynamic-pool-platforms': 'linux-m4xlarge/amd64',
  'instance-tag': 'unique-identifier',
  'dynamic.linux-arm64.type': 'aws',
  'dynamic.linux-arm64.max-instances': '10',
  'host.ppc1.address': '150.240.147.198',
  'host.ppc1.platform': 'linux/ppc64le',
  'host.ppc1.user': 'root',
  'host.ppc1.secret': 'awskeys',
  'host.ppc1.concurrency': '4',
  'host.ibmz1.address': '169.59.165.178',
  'host.ibmz1.platform': 'linux/s390x',
  'host.ibmz1.user': 'root',
  'host.ibmz1.secret': 'awskeys',
  'host.ibmz1.concurrency': '4',
};

/** A valid host entry for `name`, with `fields` overriding (undefined removes a key). */
function host(name: string, fields: Record<string, string | undefined> = {}) {
  const entry: Record<string, string | undefined> = {
    address: '10.0.0.1',
    user: 'root',
    platform: 'linux/ppc64le',
    secret: 'ppc-keys',
    concurrency: '2',
    ...fields,
  };
  return Object.fromEntries(
    Object.entries(entry)
      .filter((pair): pair is [string, string] => pair[1] !== undefined)
      .map(([field, value]) => [`host.${name}.${field}`, value]),
  );
}

const problemsOf = (data: Record<string, string>) => parseHostConfig(data).problems;

describe('static hosts', () => {
  it("parses the seed's example hosts", () => {
    const config = parseHostConfig(SEED_CONFIG);
    expect(config.problems).toEqual([]);
    expect(config.staticHosts).toEqual([
      {
        name: 'ibmz1',
        address: '169.59.165.178',
        user: 'root',
        platform: 'linux/s390x',
        secret: 'awskeys',
        concurrency: 4,
        sudoCommands: [],
      },
      {
        name: 'ppc1',
        address: '150.240.147.198',
        user: 'root',
        platform: 'linux/ppc64le',
        secret: 'awskeys',
        concurrency: 4,
        sudoCommands: [],
      },
    ]);
  });

  it('reads optional sudo-commands, host names as addresses, and trims values', () => {
    const config = parseHostConfig(
      host('ppc-2.lab_a', {
        address: ' ppc2.example.com ',
        concurrency: ' 8 ',
        'sudo-commands': '/usr/bin/podman, /usr/sbin/buildah-wrapper,',
      }),
    );
    expect(config.problems).toEqual([]);
    expect(config.staticHosts).toEqual([
      expect.objectContaining({
        name: 'ppc-2.lab_a',
        address: 'ppc2.example.com',
        concurrency: 8,
        sudoCommands: ['/usr/bin/podman', '/usr/sbin/buildah-wrapper'],
      }),
    ]);
  });

  it.each(['10.1.2.3', '::1', 'fe80::1', '2001:db8:0:0:0:0:2:1', '::ffff:192.0.2.1', 'localhost'])(
    'accepts the address %s',
    (address) => expect(problemsOf(host('h', { address }))).toEqual([]),
  );

  it.each([
    '10.1.2.256',
    '1.2.3',
    'host name',
    'host;id',
    '$(id)',
    '-bad.example.com',
    'a..b',
    'user@host',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    '[::1]',
    `${'a'.repeat(64)}.com`,
  ])('rejects the address %j', (address) => {
    expect(problemsOf(host('h', { address }))).toEqual([
      {
        key: 'host.h.address',
        reason: expect.stringContaining('expected an IPv4 or IPv6 address or a DNS host name'),
        platform: 'linux/ppc64le',
      },
    ]);
  });

  it.each([
    ['user', 'Root', 'a POSIX user name'],
    ['user', 'a'.repeat(33), 'a POSIX user name'],
    ['user', 'root;rm', 'a POSIX user name'],
    ['secret', 'My_Keys', 'a Kubernetes object name'],
    ['secret', 'k'.repeat(254), 'a Kubernetes object name'],
    ['concurrency', '0', 'an integer from 1 to 8'],
    ['concurrency', '9', 'an integer from 1 to 8'],
    ['concurrency', '2.5', 'an integer from 1 to 8'],
    ['concurrency', 'four', 'an integer from 1 to 8'],
    ['sudo-commands', '/usr/bin/podman,podman', 'absolute command path'],
    ['sudo-commands', '/bin/sh -c id', 'absolute command path'],
  ])('rejects %s %j, saying what is expected', (field, value, expected) => {
    const problems = problemsOf(host('h', { [field]: value }));
    expect(problems).toHaveLength(1);
    expect(problems[0].key).toBe(`host.h.${field}`);
    expect(problems[0].reason).toContain(expected);
    expect(problems[0].platform).toBe('linux/ppc64le');
    expect(parseHostConfig(host('h', { [field]: value })).staticHosts).toEqual([]);
  });

  it('requires concurrency instead of silently using 0, as the original did', () => {
    expect(problemsOf(host('ppc1', { concurrency: undefined }))).toEqual([
      {
        key: 'host.ppc1.concurrency',
        reason: 'required, an integer from 1 to 8 (the number of builds the host runs at once)',
        platform: 'linux/ppc64le',
      },
    ]);
  });

  it('names every missing required field', () => {
    const problems = problemsOf({ 'host.h.platform': 'linux/s390x' });
    expect(problems.map((p) => p.key)).toEqual([
      'host.h.address',
      'host.h.user',
      'host.h.secret',
      'host.h.concurrency',
    ]);
    expect(problems.every((p) => p.reason.startsWith('required, '))).toBe(true);
    expect(problems.every((p) => p.platform === 'linux/s390x')).toBe(true);
  });

  it('rejects host names that cannot be a label value', () => {
    for (const name of ['-ppc', 'ppc-', `p${'p'.repeat(63)}`, '']) {
      const config = parseHostConfig(host(name));
      expect(config.staticHosts).toEqual([]);
      expect(config.problems).toEqual([
        {
          key: `host.${name}.*`,
          reason: expect.stringContaining('not usable as the assigned-host label value'),
          platform: 'linux/ppc64le',
        },
      ]);
    }
  });

  it('reports unknown fields (typos) against the host platform', () => {
    const problems = problemsOf({ ...host('ppc1'), 'host.ppc1.adress': '10.0.0.9' });
    expect(problems).toEqual([
      {
        key: 'host.ppc1.adress',
        reason: expect.stringMatching(/unknown field "adress"; expected one of address, user/),
        platform: 'linux/ppc64le',
      },
    ]);
  });

  it('reports keys that are not host.<name>.<field> as global problems', () => {
    expect(problemsOf({ 'host.ppc1': 'x' })).toEqual([
      { key: 'host.ppc1', reason: expect.stringContaining('host.<name>.<field>') },
    ]);
  });

  it('makes problems of a host without a valid platform global', () => {
    const problems = problemsOf({
      ...host('a', { platform: 'linux/PPC64LE', user: 'Root' }),
      ...host('b', { platform: undefined }),
    });
    expect(problems.map((p) => [p.key, p.platform])).toEqual([
      ['host.a.user', undefined],
      ['host.a.platform', undefined],
      ['host.b.platform', undefined],
    ]);
    expect(problems[1].reason).toContain('PLATFORM "linux/PPC64LE"');
    expect(problems[2].reason).toMatch(/^required, /);
  });

  it('rejects a second host with the same address and user on the same platform', () => {
    const config = parseHostConfig({
      ...host('a', { address: 'PPC.example.com' }),
      ...host('b', { address: 'ppc.example.com' }),
      ...host('c', { address: 'ppc.example.com', user: 'admin' }),
      ...host('d', { address: 'ppc.example.com', platform: 'linux/s390x' }),
    });
    expect(config.staticHosts.map((h) => h.name)).toEqual(['a', 'c', 'd']);
    expect(config.problems).toEqual([
      {
        key: 'host.b.address',
        reason: expect.stringContaining('already configured as host.a for linux/ppc64le'),
        platform: 'linux/ppc64le',
      },
    ]);
  });

  it('quotes control characters in keys and values', () => {
    const problems = problemsOf(host('h\u001b', { user: 'r\u001bot' }));
    expect(JSON.stringify(problems)).not.toContain('\u001b');
    expect(problems.map((p) => p.key)).toEqual(['host.h\\u001b.*', 'host.h\\u001b.user']);
  });
});

describe('static platform resolution', () => {
  it("serves the seed's static platforms from their hosts, after local and dynamic", () => {
    const config = parseHostConfig({
      ...SEED_CONFIG,
      ...host('arm1', { platform: 'linux/arm64' }),
      ...host('amd1', { platform: 'linux/amd64' }),
    });
    const resolve = (platform: string) => resolvePlatform(config, platform, 'builds', 'mpc');
    expect(resolve('linux/ppc64le')).toEqual({
      kind: 'static',
      hosts: [expect.objectContaining({ name: 'ppc1', address: '150.240.147.198' })],
    });
    expect(resolve('linux/s390x')).toEqual({
      kind: 'static',
      hosts: [expect.objectContaining({ name: 'ibmz1', concurrency: 4 })],
    });
    expect(resolve('linux/amd64')).toEqual({ kind: 'local' });
    expect(resolve('linux/arm64').kind).toBe('error');
  });

  it('fails only the platform of a bad host, quoting every problem', () => {
    const config = parseHostConfig({
      ...SEED_CONFIG,
      ...host('ppc2', { concurrency: undefined, user: 'Root' }),
    });
    expect(config.staticHosts.map((h) => h.name)).toEqual(['ibmz1', 'ppc1']);
    const ppc = resolvePlatform(config, 'linux/ppc64le', 'builds', 'mpc');
    expect(ppc.kind).toBe('error');
    if (ppc.kind === 'error') {
      expect(ppc.message).toContain(
        'platform linux/ppc64le is misconfigured in ConfigMap mpc/host-config',
      );
      expect(ppc.message).toContain('host.ppc2.user: "Root" is not valid; expected a POSIX user');
      expect(ppc.message).toContain(
        'host.ppc2.concurrency: required, an integer from 1 to 8 (the number of builds the host runs at once)',
      );
    }
    expect(resolvePlatform(config, 'linux/s390x', 'builds', 'mpc').kind).toBe('static');
    expect(resolvePlatform(config, 'linux/amd64', 'builds', 'mpc')).toEqual({ kind: 'local' });
  });

  it('keeps every platform working when the bad host has no valid platform, but hints at it', () => {
    const config = parseHostConfig({
      ...SEED_CONFIG,
      ...host('stray', { platform: 'ppc64le' }),
    });
    expect(resolvePlatform(config, 'linux/ppc64le', 'builds', 'mpc').kind).toBe('static');
    expect(resolvePlatform(config, 'linux/s390x', 'builds', 'mpc').kind).toBe('static');
    const unknown = resolvePlatform(config, 'linux/riscv64', 'builds', 'mpc');
    expect(unknown.kind === 'error' && unknown.message).toContain(
      'also has problems: host.stray.platform: PLATFORM "ppc64le"',
    );
  });
});
