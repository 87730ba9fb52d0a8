// Pure logic: PLATFORM validation, host-config parsing and platform resolution.
import { describe, expect, it } from '@jest/globals';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import { parseHostConfig } from '../platform-config/host-config.js';
import { checkPlatform, clipBytes } from '../platform-config/platform.js';
import { resolvePlatform } from '../platform-config/resolve.js';
import { checkTaskRunInput } from '../platform-config/taskrun-input.js';

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
      namespacesRestricted: true,
      requireHostKeys: false,
      staticHosts: [],
      dynamic: [],
      problems: expect.any(Array),
    });
    // The listed dynamic platforms have none of their dynamic.<cfg>.* keys: only they complain.
    expect(config.problems.length).toBeGreaterThan(0);
    for (const problem of config.problems) {
      expect(problem.key).toMatch(/^dynamic\.(linux-arm64|linux-m4xlarge-amd64)\./);
    }
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

  it('serves complete dynamic platforms one VM each, and pool platforms from shared VMs', () => {
    const aws = (cfg: string) => ({
      [`dynamic.${cfg}.type`]: 'aws',
      [`dynamic.${cfg}.region`]: 'us-east-1',
      [`dynamic.${cfg}.ami`]: 'ami-03d6a5256a46c9feb',
      [`dynamic.${cfg}.instance-type`]: 't4g.medium',
      [`dynamic.${cfg}.key-name`]: 'builders',
      [`dynamic.${cfg}.aws-secret`]: 'awsiam',
      [`dynamic.${cfg}.ssh-secret`]: 'awskeys',
      [`dynamic.${cfg}.max-instances`]: '4',
    });
    const cloudConfig = parseHostConfig({
      'dynamic-platforms': 'linux/arm64',
      'dynamic-pool-platforms': 'linux/riscv64',
      'instance-tag': 'prod',
      ...aws('linux-arm64'),
      ...aws('linux-riscv64'),
      'dynamic.linux-riscv64.concurrency': '4',
      'dynamic.linux-riscv64.max-age': '60',
    });
    expect(cloudConfig.problems).toEqual([]);
    const arm = resolvePlatform(cloudConfig, 'linux/arm64', 'builds', 'mpc');
    expect(arm.kind === 'dynamic' && arm.cloud.common.maxInstances).toBe(4);
    const pool = resolvePlatform(cloudConfig, 'linux/riscv64', 'builds', 'mpc');
    expect(pool.kind === 'pool' && pool.cloud.pool).toEqual({ concurrency: 4, maxAgeMinutes: 60 });
    // A dynamic platform missing its keys is misconfigured, naming them.
    const missing = resolve('linux/arm64');
    expect(missing.kind === 'error' && missing.message).toMatch(
      /misconfigured.*dynamic\.linux-arm64\.type: required/,
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

  it('allows no namespace when every allowed-namespaces entry is broken (fails closed)', () => {
    const broken = parseHostConfig({
      'local-platforms': 'linux/amd64',
      'allowed-namespaces': '(unclosed,[z-a]',
    });
    expect(broken.allowedNamespaces).toEqual([]);
    expect(broken.problems.filter((p) => p.key === 'allowed-namespaces')).toHaveLength(2);
    for (const namespace of ['team-a', 'default', 'unclosed']) {
      const denied = resolvePlatform(broken, 'linux/amd64', namespace, 'mpc');
      expect(denied.kind).toBe('error');
      expect(denied.kind === 'error' && denied.message).toMatch(
        /may not use multi-platform hosts.*allowed-namespaces: "\(unclosed" is not a valid regular expression/,
      );
    }
  });
});

describe('clipping text for size-limited fields', () => {
  it('keeps short text, and cuts long text to the byte budget at a character boundary', () => {
    expect(clipBytes('short', 10)).toBe('short');
    const clipped = clipBytes('ä'.repeat(300), 380);
    expect(new TextEncoder().encode(clipped).length).toBeLessThanOrEqual(380);
    expect(clipped.endsWith('ä…')).toBe(true);
    expect(clipBytes('🙂🙂🙂', 9)).toBe('🙂…');
  });
});

describe('TaskRun input checked before anything is allocated', () => {
  it('refuses a name whose Secret name would exceed 253 characters, saying why', () => {
    expect(checkTaskRunInput({ namespace: 'ns', name: 'a'.repeat(234) })).toEqual({ ok: true });
    const tooLong = checkTaskRunInput({ namespace: 'ns', name: 'a'.repeat(235) });
    expect(tooLong).toMatchObject({ ok: false, answerable: false });
    expect(!tooLong.ok && tooLong.reason).toMatch(
      /235 characters long.*multi-platform-ssh-<name>.*254.*at most 234 characters/,
    );
  });

  it('refuses a PLATFORM too long for the target-platform label', () => {
    const platform = `linux/${'a'.repeat(57)}`;
    expect(checkPlatform(platform)).toEqual({ ok: true });
    const long = checkPlatform(`${platform}b`);
    expect(long.ok === false && long.reason).toMatch(/64 characters long; at most 63/);
  });
});

// The multi-platform-controller's example ConfigMap (its docs, "Configuration").
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
  it("parses the multi-platform-controller's example hosts", () => {
    const config = parseHostConfig(SEED_CONFIG);
    // (its dynamic platforms are abridged here, so only they have problems)
    expect(config.problems.filter((p) => !p.key.startsWith('dynamic.'))).toEqual([]);
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
    ['serves', 'both', 'expected builds'],
    ['serves', 'Machines', 'expected builds'],
  ])('rejects %s %j, saying what is expected', (field, value, expected) => {
    const problems = problemsOf(host('h', { [field]: value }));
    expect(problems).toHaveLength(1);
    expect(problems[0].key).toBe(`host.h.${field}`);
    expect(problems[0].reason).toContain(expected);
    expect(problems[0].platform).toBe('linux/ppc64le');
    expect(parseHostConfig(host('h', { [field]: value })).staticHosts).toEqual([]);
  });

  it('reads serves: builds by default, machines only with concurrency 1', () => {
    const hosts = (data: Record<string, string | undefined>) =>
      parseHostConfig(host('h', data)).staticHosts;
    expect(hosts({ concurrency: '1', serves: undefined })[0]?.serves).toBeUndefined();
    expect(hosts({ concurrency: '4', serves: ' builds ' })[0]?.serves).toBeUndefined();
    expect(hosts({ concurrency: '1', serves: 'machines' })[0]?.serves).toBe('machines');
    expect(problemsOf(host('h', { concurrency: '2', serves: 'machines' }))).toEqual([
      {
        key: 'host.h.concurrency',
        reason:
          '"2" is not valid for a host that serves machines; expected 1 (one Machine per host)',
        platform: 'linux/ppc64le',
      },
    ]);
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

describe('static hosts: host-key', () => {
  const key = generateEd25519KeyPair('root@ppc').publicKey; // `ssh-ed25519 AAAA… root@ppc`
  const [type, base64] = key.split(' ');

  it('reads a known_hosts-form key, keeping type and key only', () => {
    const config = parseHostConfig(host('h', { 'host-key': ` ${key} ` }));
    expect(config.problems).toEqual([]);
    expect(config.staticHosts[0]?.hostKey).toBe(`${type} ${base64}`);
    expect(parseHostConfig(host('h')).staticHosts[0]?.hostKey).toBeUndefined();
  });

  it.each([
    ['not a key', 'hello', /not a key; expected one line "<type> <base64 key>"/],
    ['an unknown type', `ssh-dss ${base64}`, /unknown key type "ssh-dss"/],
    ['no base64', 'ssh-ed25519 !!!!', /is not base64/],
    ['a truncated key', `ssh-ed25519 ${base64!.slice(0, 20)}`, /is not a ssh-ed25519 key/],
    ['a key of another type', `ecdsa-sha2-nistp256 ${base64}`, /is not a ecdsa-sha2-nistp256 key/],
    ['two lines', `${key}\n${key}`, /not a key/],
  ])('reports %s against that host alone, and keeps the host', (_what, value, reason) => {
    const config = parseHostConfig({
      ...host('bad', { 'host-key': value }),
      ...host('good', { address: '10.0.0.2', 'host-key': key }),
    });
    expect(config.problems).toEqual([
      { key: 'host.bad.host-key', reason: expect.stringMatching(reason) },
    ]);
    // its platform still resolves: the SSH activities refuse the one host, the others serve
    expect(resolvePlatform(config, 'linux/ppc64le', 'builds', 'mpc').kind).toBe('static');
    expect(config.staticHosts.find((h) => h.name === 'bad')?.hostKey).toBeUndefined();
  });

  it('require-host-keys: "true" reports each host without one; anything but true/false fails closed', () => {
    const required = parseHostConfig({
      'require-host-keys': 'true',
      ...host('keyless'),
      ...host('keyed', { address: '10.0.0.2', 'host-key': key }),
    });
    expect(required.requireHostKeys).toBe(true);
    expect(required.problems).toEqual([
      {
        key: 'host.keyless.host-key',
        reason: expect.stringContaining('required, because require-host-keys is "true"'),
      },
    ]);
    const typo = parseHostConfig({ 'require-host-keys': 'yes', ...host('keyless') });
    expect(typo.requireHostKeys).toBe(true);
    expect(typo.problems.map((p) => p.key)).toEqual(['require-host-keys', 'host.keyless.host-key']);
    expect(parseHostConfig({ 'require-host-keys': 'false', ...host('h') }).problems).toEqual([]);
  });
});

describe('static platform resolution', () => {
  it("serves the multi-platform-controller's static platforms from their hosts, after local and dynamic", () => {
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

// Dynamic and dynamic-pool platforms: `dynamic.<cfg>.*` keys (docs/architecture.md, "host-config").
import { parseAwsConfig } from '../platform-config/aws-config.js';
import { parseDynamicPlatforms, type ProviderParsers } from '../platform-config/dynamic.js';

describe('dynamic platforms', () => {
  // The multi-platform-controller's example ConfigMap (its docs), dynamic keys verbatim.
  const SEED: Record<string, string> = {
    'dynamic-platforms': 'linux/arm64',
    'dynamic-pool-platforms': 'linux-m4xlarge/amd64',
    'instance-tag': 'unique-identifier',
    'dynamic.linux-arm64.type': 'aws',
    'dynamic.linux-arm64.region': 'us-east-1',
    'dynamic.linux-arm64.ami': 'ami-03d6a5256a46c9feb',
    'dynamic.linux-arm64.instance-type': 't4g.medium',
    'dynamic.linux-arm64.key-name': 'sdouglas-arm-test',
    'dynamic.linux-arm64.aws-secret': 'awsiam',
    'dynamic.linux-arm64.ssh-secret': 'awskeys',
    'dynamic.linux-arm64.security-group': 'launch-wizard-1',
    'dynamic.linux-arm64.max-instances': '10',
    'dynamic.linux-m4xlarge-amd64.type': 'aws',
    'dynamic.linux-m4xlarge-amd64.region': 'us-east-1',
    'dynamic.linux-m4xlarge-amd64.ami': 'ami-026ebd4cfe2c043b2',
    'dynamic.linux-m4xlarge-amd64.instance-type': 'm6a.4xlarge',
    'dynamic.linux-m4xlarge-amd64.key-name': 'konflux-stage-ext-mab01',
    'dynamic.linux-m4xlarge-amd64.aws-secret': 'aws-account',
    'dynamic.linux-m4xlarge-amd64.ssh-secret': 'aws-ssh-key',
    'dynamic.linux-m4xlarge-amd64.security-group-id': 'sg-05bc8dd0b52158567',
    'dynamic.linux-m4xlarge-amd64.max-instances': '4',
    'dynamic.linux-m4xlarge-amd64.max-concurrency': '4',
    'dynamic.linux-m4xlarge-amd64.subnet-id': 'subnet-030738beb81d3863a',
    'dynamic.linux-m4xlarge-amd64.instance-tag': 'some-pool-identifier',
  };
  const AWS_ONLY: ProviderParsers = { aws: parseAwsConfig };

  /** Parses `data` the way the lead will: lists and instance-tag from parseHostConfig. */
  function parse(data: Record<string, string>, parsers: ProviderParsers = AWS_ONLY) {
    const config = parseHostConfig(data);
    return parseDynamicPlatforms(data, config, parsers);
  }
  /** One AWS dynamic platform linux/arm64 with `fields` overriding (undefined removes a key). */
  function arm64(fields: Record<string, string | undefined> = {}) {
    const entry: Record<string, string | undefined> = {
      type: 'aws',
      region: 'us-east-1',
      ami: 'ami-03d6a5256a46c9feb',
      'instance-type': 't4g.medium',
      'key-name': 'builder',
      'aws-secret': 'awsiam',
      'ssh-secret': 'awskeys',
      'max-instances': '2',
      ...fields,
    };
    return {
      'dynamic-platforms': 'linux/arm64',
      'instance-tag': 'prod',
      ...Object.fromEntries(
        Object.entries(entry)
          .filter((pair): pair is [string, string] => pair[1] !== undefined)
          .map(([field, value]) => [`dynamic.linux-arm64.${field}`, value]),
      ),
    };
  }
  const problemsOf = (data: Record<string, string>) => parse(data).problems;

  it("parses the multi-platform-controller's dynamic platform, with every default", () => {
    const { platforms, problems } = parse(SEED);
    expect(platforms.find((p) => p.platform === 'linux/arm64')).toEqual({
      platform: 'linux/arm64',
      configName: 'linux-arm64',
      common: {
        maxInstances: 10,
        sshSecret: 'awskeys',
        instanceTag: 'unique-identifier',
        allocationTimeoutSeconds: 600,
        checkIntervalSeconds: 60,
        sudoCommands: [],
      },
      provider: {
        type: 'aws',
        config: {
          region: 'us-east-1',
          ami: 'ami-03d6a5256a46c9feb',
          instanceType: 't4g.medium',
          keyName: 'sdouglas-arm-test',
          awsSecret: 'awsiam',
          securityGroup: 'launch-wizard-1',
          strictPublicAddress: false,
          disk: { sizeGb: 40 },
        },
      },
    });
    // The multi-platform-controller's pool omits max-age, which a pool cannot do without: only that
    // is reported.
    expect(problems).toEqual([
      {
        key: 'dynamic.linux-m4xlarge-amd64.max-age',
        reason: 'required, an integer from 1 to 1440 (minutes a pool VM takes new builds)',
        platform: 'linux-m4xlarge/amd64',
      },
    ]);
  });

  it("parses the multi-platform-controller's pool once max-age is set, reading max-concurrency as concurrency", () => {
    const { platforms, problems } = parse({
      ...SEED,
      'dynamic.linux-m4xlarge-amd64.max-age': '120',
    });
    expect(problems).toEqual([]);
    const pool = platforms.find((p) => p.platform === 'linux-m4xlarge/amd64');
    expect(pool?.pool).toEqual({ concurrency: 4, maxAgeMinutes: 120 });
    expect(pool?.common.instanceTag).toBe('some-pool-identifier');
    expect(pool?.common.maxInstances).toBe(4);
    expect(pool?.provider).toEqual({
      type: 'aws',
      config: expect.objectContaining({
        instanceType: 'm6a.4xlarge',
        securityGroupId: 'sg-05bc8dd0b52158567',
        subnetId: 'subnet-030738beb81d3863a',
      }),
    });
  });

  it('applies every AWS key and every common key', () => {
    const userData = '#!/bin/bash\n  echo "hello"  \n';
    const { platforms, problems } = parse(
      arm64({
        'instance-tag': 'prod-arm64',
        'allocation-timeout': '900',
        'check-interval': '5',
        'sudo-commands': '/usr/bin/podman, /usr/bin/buildah',
        'security-group': 'builders',
        'security-group-id': 'sg-05bc8dd0b52158567',
        'subnet-id': 'subnet-030738beb81d3863a',
        'instance-profile-name': 'builder-profile',
        'instance-profile-arn': 'arn:aws:iam::123456789012:instance-profile/builder-profile',
        'strict-public-address': 'true',
        disk: '200',
        iops: '4000',
        throughput: '250',
        'user-data': userData,
        tenancy: 'host',
        'host-resource-group-arn': 'arn:aws:resource-groups:us-east-1:123456789012:group/mac',
        'license-configuration-arn':
          'arn:aws:license-manager:us-east-1:123456789012:license-configuration:lic-0123abcd',
      }),
    );
    expect(problems).toEqual([]);
    expect(platforms[0].common).toEqual({
      maxInstances: 2,
      sshSecret: 'awskeys',
      instanceTag: 'prod-arm64',
      allocationTimeoutSeconds: 900,
      checkIntervalSeconds: 5,
      sudoCommands: ['/usr/bin/podman', '/usr/bin/buildah'],
    });
    expect(platforms[0].provider.config).toEqual({
      region: 'us-east-1',
      ami: 'ami-03d6a5256a46c9feb',
      instanceType: 't4g.medium',
      keyName: 'builder',
      awsSecret: 'awsiam',
      securityGroup: 'builders',
      securityGroupId: 'sg-05bc8dd0b52158567',
      subnetId: 'subnet-030738beb81d3863a',
      instanceProfileName: 'builder-profile',
      instanceProfileArn: 'arn:aws:iam::123456789012:instance-profile/builder-profile',
      strictPublicAddress: true,
      disk: { sizeGb: 200, iops: 4000, throughputMiBps: 250 },
      userData, // raw, untrimmed: base64-encoded only at launch
      dedicatedHost: {
        tenancy: 'host',
        hostResourceGroupArn: 'arn:aws:resource-groups:us-east-1:123456789012:group/mac',
        licenseConfigurationArn:
          'arn:aws:license-manager:us-east-1:123456789012:license-configuration:lic-0123abcd',
      },
    });
    expect(platforms[0].pool).toBeUndefined();
  });

  it('names every missing required key', () => {
    const data = {
      'dynamic-platforms': 'linux/arm64',
      'dynamic-pool-platforms': 'linux/amd64',
      'instance-tag': 'prod',
      'dynamic.linux-arm64.type': 'aws',
      'dynamic.linux-amd64.type': 'aws',
    };
    const { platforms, problems } = parse(data);
    expect(platforms).toEqual([]);
    const required = (platform: string, cfg: string, keys: string[]) =>
      keys.map((key) => ({ key: `dynamic.${cfg}.${key}`, platform }));
    const aws = ['region', 'ami', 'instance-type', 'key-name', 'aws-secret'];
    const common = ['max-instances', 'ssh-secret'];
    expect(problems.map(({ key, platform }) => ({ key, platform })).sort(byKey)).toEqual(
      [
        ...required('linux/arm64', 'linux-arm64', [...common, ...aws]),
        ...required('linux/amd64', 'linux-amd64', [...common, ...aws, 'concurrency', 'max-age']),
      ].sort(byKey),
    );
    for (const problem of problems) expect(problem.reason).toMatch(/^required, /);
    expect(problemsOf({ 'dynamic-platforms': 'linux/arm64' })).toContainEqual({
      key: 'dynamic.linux-arm64.type',
      reason: 'required, the cloud provider: aws, ibmz or ibmp',
      platform: 'linux/arm64',
    });
  });

  it.each([
    ['type', 'gcp', /"gcp" is not valid; expected aws, ibmz or ibmp/],
    ['max-instances', '0', /"0" is not an integer of at least 1/],
    ['max-instances', 'ten', /"ten" is not an integer/],
    ['max-instances', '1.5', /"1.5" is not an integer/],
    ['allocation-timeout', '-1', /"-1" is not an integer from 1 to 86400/],
    ['check-interval', '60s', /"60s" is not an integer from 1 to 86400 \(seconds between/],
    ['ssh-secret', 'My_Keys', /expected a Kubernetes Secret name/],
    ['aws-secret', 'a/b', /expected a Kubernetes Secret name/],
    ['instance-tag', 'has space', /not usable as an owner tag/],
    ['sudo-commands', '/usr/bin/podman,rm -rf', /"rm -rf" is not an absolute command path/],
    ['region', 'US-East-1', /expected an AWS region such as us-east-1/],
    ['ami', 'ubuntu-22.04', /expected an image id such as ami-/],
    ['instance-type', 't4g', /expected an EC2 instance type such as t4g.medium/],
    ['key-name', 'a\u0007b', /"a\\u0007b" is not valid/],
    ['security-group-id', 'launch-wizard-1', /expected a security group id/],
    ['subnet-id', 'sub-1', /expected a subnet id/],
    ['instance-profile-name', 'has space', /expected an IAM instance profile name/],
    ['instance-profile-arn', 'builder-profile', /expected an ARN such as arn:aws:iam::/],
    ['strict-public-address', 'yes', /"yes" is not valid; expected true or false/],
    ['disk', '0', /"0" is not an integer of at least 1 \(GB of the gp3 root volume\)/],
    ['disk', '40GB', /"40GB" is not an integer/],
    ['iops', '100', /"100" is not an integer of at least 3000/],
    ['throughput', '10', /"10" is not an integer of at least 125/],
  ])('rejects %s=%j with a clear reason', (key, value, reason) => {
    const problems = problemsOf(arm64({ [key]: value }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toEqual({
      key: `dynamic.linux-arm64.${key}`,
      reason: expect.stringMatching(reason),
      platform: 'linux/arm64',
    });
  });

  it("rejects user-data beyond AWS's 16 KB", () => {
    expect(problemsOf(arm64({ 'user-data': 'é'.repeat(8193) }))).toEqual([
      {
        key: 'dynamic.linux-arm64.user-data',
        reason: 'is 16386 bytes; AWS accepts at most 16384',
        platform: 'linux/arm64',
      },
    ]);
  });

  it.each([
    ['concurrency', '0', /"0" is not an integer from 1 to 8 \(the builds each VM runs at once\)/],
    ['concurrency', '9', /"9" is not an integer from 1 to 8/],
    ['max-age', '1441', /"1441" is not an integer from 1 to 1440/],
    ['max-age', '0', /"0" is not an integer from 1 to 1440/],
  ])('rejects pool %s=%j', (key, value, reason) => {
    const data = {
      ...arm64({ concurrency: '2', 'max-age': '60', [key]: value }),
      'dynamic-platforms': '',
      'dynamic-pool-platforms': 'linux/arm64',
    };
    expect(problemsOf(data)).toEqual([
      {
        key: `dynamic.linux-arm64.${key}`,
        reason: expect.stringMatching(reason),
        platform: 'linux/arm64',
      },
    ]);
  });

  it('requires tenancy, host-resource-group-arn and license-configuration-arn together', () => {
    const problems = problemsOf(arm64({ tenancy: 'host' }));
    expect(problems.map((p) => p.key)).toEqual([
      'dynamic.linux-arm64.host-resource-group-arn',
      'dynamic.linux-arm64.license-configuration-arn',
    ]);
    expect(problems[0].reason).toContain('required because tenancy is set');
    expect(problems[0].reason).toContain('all three or none');
    const two = problemsOf(
      arm64({
        'host-resource-group-arn': 'arn:aws:resource-groups:us-east-1:123456789012:group/mac',
        'license-configuration-arn':
          'arn:aws:license-manager:us-east-1:123456789012:license-configuration:lic-0123abcd',
      }),
    );
    expect(two).toEqual([
      {
        key: 'dynamic.linux-arm64.tenancy',
        reason: expect.stringContaining(
          'required because host-resource-group-arn and license-configuration-arn are set',
        ),
        platform: 'linux/arm64',
      },
    ]);
    const dedicated = problemsOf(
      arm64({
        tenancy: 'dedicated',
        'host-resource-group-arn': 'arn:aws:resource-groups:us-east-1:123456789012:group/mac',
        'license-configuration-arn':
          'arn:aws:license-manager:us-east-1:123456789012:license-configuration:lic-0123abcd',
      }),
    );
    expect(dedicated.map((p) => [p.key, p.reason])).toEqual([
      ['dynamic.linux-arm64.tenancy', expect.stringContaining('expected host')],
    ]);
    expect(parse(arm64()).platforms[0].provider.config).not.toHaveProperty('dedicatedHost');
  });

  it('fails only the platform with the bad entry', () => {
    const data = {
      ...arm64({ ami: 'nope' }),
      ...SEED,
      'dynamic.linux-arm64.ami': 'nope',
      'dynamic.linux-m4xlarge-amd64.max-age': '60',
    };
    const { platforms, problems } = parse(data);
    expect(platforms.map((p) => p.platform)).toEqual(['linux-m4xlarge/amd64']);
    expect(problems).toEqual([
      {
        key: 'dynamic.linux-arm64.ami',
        reason: expect.stringContaining('"nope" is not valid'),
        platform: 'linux/arm64',
      },
    ]);
  });

  it('needs an owner tag: its own instance-tag or a valid global one', () => {
    const untagged: Record<string, string> = arm64();
    delete untagged['instance-tag'];
    expect(problemsOf(untagged)).toEqual([
      {
        key: 'dynamic.linux-arm64.instance-tag',
        reason: expect.stringContaining('required when the global instance-tag is not set'),
        platform: 'linux/arm64',
      },
    ]);
    expect(parse({ ...untagged, 'dynamic.linux-arm64.instance-tag': 'own' }).problems).toEqual([]);
    expect(problemsOf({ ...arm64(), 'instance-tag': 'two words' })).toEqual([
      {
        key: 'instance-tag',
        reason: expect.stringContaining('"two words" is not usable as an owner tag'),
        platform: 'linux/arm64',
      },
    ]);
  });

  it('reports unknown and pool-only keys instead of ignoring them', () => {
    const problems = problemsOf(
      arm64({ instance_type: 'm5.large', 'spot-price': '0.1', concurrency: '2' }),
    );
    expect(problems.map((p) => [p.key, p.reason])).toEqual([
      [
        'dynamic.linux-arm64.concurrency',
        'applies only to dynamic-pool-platforms; remove it or list linux/arm64 there',
      ],
      [
        'dynamic.linux-arm64.instance_type',
        'unknown key "instance_type"; did you mean instance-type?',
      ],
      [
        'dynamic.linux-arm64.spot-price',
        expect.stringContaining('spot instances are not supported'),
      ],
    ]);
    expect(problemsOf(arm64({ colour: 'blue' }))[0].reason).toMatch(
      /unknown key "colour"; expected one of .*ami, .*user-data/,
    );
  });

  it('rejects concurrency and max-concurrency that disagree, and a platform listed twice', () => {
    const pool = {
      ...arm64({ concurrency: '2', 'max-concurrency': '3', 'max-age': '60' }),
      'dynamic-platforms': '',
      'dynamic-pool-platforms': 'linux/arm64',
    };
    expect(problemsOf(pool).map((p) => [p.key, p.reason])).toEqual([
      ['dynamic.linux-arm64.max-concurrency', 'conflicts with concurrency; set only concurrency'],
    ]);
    const both = { ...arm64(), 'dynamic-pool-platforms': 'linux/arm64' };
    expect(problemsOf(both)).toContainEqual({
      key: 'dynamic-pool-platforms',
      reason: 'linux/arm64 is also listed in dynamic-platforms; list it in only one of them',
      platform: 'linux/arm64',
    });
  });

  it('says plainly when a provider type has no parser yet, and uses one once registered', () => {
    const data = {
      'dynamic-platforms': 'linux/s390x',
      'instance-tag': 'prod',
      'dynamic.linux-s390x.type': 'ibmz',
      'dynamic.linux-s390x.max-instances': '2',
      'dynamic.linux-s390x.ssh-secret': 'ibm-keys',
      'dynamic.linux-s390x.vpc': 'us-east-default-vpc',
      'dynamic.linux-s390x.bogus': 'x',
    };
    expect(parse(data).problems).toEqual([
      {
        key: 'dynamic.linux-s390x.type',
        reason: 'type ibmz is not supported yet',
        platform: 'linux/s390x',
      },
    ]);
    const seen: string[] = [];
    const parsers: ProviderParsers<{ aws: unknown; ibmz: { vpc: string }; ibmp: unknown }> = {
      aws: parseAwsConfig,
      ibmz: (read, problem) => {
        seen.push(read('vpc') ?? '');
        problem('image-id', 'required, the image');
        return undefined;
      },
    };
    expect(parse(data, parsers).problems.map((p) => [p.key, p.reason])).toEqual([
      ['dynamic.linux-s390x.image-id', 'required, the image'],
      ['dynamic.linux-s390x.bogus', expect.stringContaining('unknown key "bogus"')],
    ]);
    expect(seen).toEqual(['us-east-default-vpc']);
    parsers.ibmz = (read) => ({ vpc: read('vpc') ?? '' });
    delete (data as Record<string, string>)['dynamic.linux-s390x.bogus'];
    const ok = parse(data, parsers);
    expect(ok.platforms[0].provider).toEqual({
      type: 'ibmz',
      config: { vpc: 'us-east-default-vpc' },
    });
  });
});

const byKey = (a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key);
