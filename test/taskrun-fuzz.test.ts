// Fuzz: generated TaskRuns (fast-check, seeded), hostile ones included, against a static pool on
// real sshd hosts, in a namespace whose name is as long as Kubernetes allows. Names of every
// length up to 253 (with dots), PLATFORM values with shell metacharacters, quotes, newlines,
// unicode and 10,000 characters. Each gets a served Secret, an `error` Secret, or a Warning
// Event where no Secret can exist; none costs a host its health or runs anything on a host.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { waitFor } from '../local-stack/process.js';
import { secretNameFor } from '../platform-config/contract.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';

let pool: StaticPool;

beforeAll(async () => {
  pool = await createStaticPool('fuzz', 2, { longNamespace: true });
  expect(pool.scope.namespace).toHaveLength(63);
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0 }, { host: 1 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);
/** Valid DNS subdomain names (what the API server accepts), up to its 253-character limit. */
const taskRunName = fc.oneof(
  fc.array(label, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.')),
  fc.integer({ min: 200, max: 253 }).map((n) => `a${'b'.repeat(n - 2)}c`),
  fc.constant(`x${'.y'.repeat(126)}`), // 253, dots everywhere
);
const hostilePlatform = fc.oneof(
  fc.constantFrom(
    '$(touch /tmp/pwned)',
    'linux/arm64; touch /tmp/pwned',
    "linux/`touch /tmp/pwned`'",
    'linux/arm64\ntouch /tmp/pwned',
    'linux/ARM64',
    'linux/ärm64',
    '🙂/🙃',
    '',
    ' ',
    'linux/',
    'a/b/c',
    `linux/${'a'.repeat(10_000)}`,
    '../../etc/passwd',
  ),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
);

describe('generated TaskRuns, hostile ones included', () => {
  it('each gets a served or error Secret, or a Warning Event, and no host is blamed', async () => {
    const { scope, hosts } = pool;
    const specs = fc
      .sample(
        fc.record({ name: taskRunName, platform: fc.oneof(hostilePlatform, fc.constant('OK')) }),
        { numRuns: 30, seed: 42 },
      )
      .map((spec) => ({
        ...spec,
        platform: spec.platform === 'OK' ? pool.platform : spec.platform,
      }))
      .filter((spec, i, all) => all.findIndex((other) => other.name === spec.name) === i);
    const created = [];
    for (const spec of specs) created.push(await scope.taskRuns.create(spec));

    // All at once: builds are served in the order they reach the allocator, and each one
    // served completes, freeing its slot for the next.
    await Promise.all(
      created.map(async (tr, i) => {
        const spec = specs[i]!;
        if (secretNameFor(spec.name).length > 253) {
          await waitFor(`a Warning Event for the ${spec.name.length}-character name`, async () => {
            const list = await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace });
            return list.items.find(
              (e) => e.involvedObject.uid === tr.uid && e.reason === 'CannotServe',
            );
          });
          return;
        }
        const data = await scope.taskRuns.waitForSecret(spec.name, 90_000);
        await scope.taskRuns.complete(spec.name);
        if (spec.platform === pool.platform) {
          expect(Object.keys(data).sort()).toEqual([
            'host',
            'otp',
            'otp-ca',
            'otp-server',
            'user-dir',
          ]);
        } else {
          expect(Object.keys(data)).toEqual(['error']);
          expect(data.error).toMatch(/PLATFORM|platform/);
          expect(data.error.length).toBeLessThan(2_000);
        }
      }),
    );
    for (const spec of specs) {
      if (secretNameFor(spec.name).length > 253) await scope.taskRuns.complete(spec.name);
    }
    for (const spec of specs) {
      if (secretNameFor(spec.name).length <= 253) await scope.taskRuns.waitForSecretGone(spec.name);
    }
    for (const host of hosts) {
      expect(await pool.buildUsers(host)).toEqual([]);
      expect((await host.exec(['test', '-e', '/tmp/pwned'])).code).not.toBe(0);
    }
    const view = await pool.allocator();
    expect(view.inUse).toBe(0);
    for (const host of view.hosts) expect(host.health).toBe('healthy');
    console.log(
      `${specs.length} generated TaskRuns: ${specs.filter((s) => s.platform === pool.platform).length} served, ` +
        `${specs.filter((s) => secretNameFor(s.name).length > 253).length} with names no Secret can have`,
    );
  });
});
