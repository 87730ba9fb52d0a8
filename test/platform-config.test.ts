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
