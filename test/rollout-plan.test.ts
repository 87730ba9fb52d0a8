// The pure parts of an OS image rollout: maxUnavailable as MCO scales it, the candidates in zone
// order within it, the effective image (the last MachineConfig by name wins), image references by
// distribution/reference's grammar, and label selectors as the API server reads them.
import { describe, expect, it } from '@jest/globals';
import { parseImageReference } from '../shared/image-reference.js';
import { labelSelectorQuery } from '../shared/label-selector.js';
import { effectiveOsImage } from '../shared/os-image.js';
import { maxUnavailableOf, nextCandidates, type PoolNode } from '../workflows/rollout/plan.js';

const DIGEST = `sha256:${'ab'.repeat(32)}`;

describe('maxUnavailable', () => {
  it('is 1 by default and for 0, an int as given, a percent of the pool rounded down (at least 1)', () => {
    expect(maxUnavailableOf(undefined, 5)).toBe(1);
    expect(maxUnavailableOf(0, 5)).toBe(1);
    expect(maxUnavailableOf(2, 5)).toBe(2);
    expect(maxUnavailableOf('40%', 5)).toBe(2);
    expect(maxUnavailableOf('50%', 5)).toBe(2);
    expect(maxUnavailableOf('10%', 5)).toBe(1);
    expect(maxUnavailableOf('0%', 5)).toBe(1);
    expect(maxUnavailableOf('100%', 5)).toBe(5);
  });

  it('refuses what is neither, saying so', () => {
    for (const bad of [-1, 1.5, 'two', '150%', '%', '5 %x']) {
      expect(maxUnavailableOf(bad, 5)).toEqual({ error: expect.stringMatching(/maxUnavailable/) });
    }
  });
});

describe('the nodes a rollout starts now', () => {
  const node = (name: string, zone: string, more: Partial<PoolNode> = {}): PoolNode => ({
    name,
    zone,
    ready: true,
    unschedulable: false,
    currentImage: 'old',
    ...more,
  });
  const names = (nodes: PoolNode[]) => nodes.map((n) => n.name);

  it('takes them in zone order, as many as maxUnavailable leaves room for', () => {
    const pool = [
      node('n5', 'b'),
      node('n1', 'c'),
      node('n2', 'a'),
      node('n4', 'a'),
      node('n3', 'b'),
    ];
    expect(names(nextCandidates(pool, 'new', 2, new Set()))).toEqual(['n2', 'n4']);
    expect(names(nextCandidates(pool, 'new', 2, new Set(['n2'])))).toEqual(['n4']);
    expect(names(nextCandidates(pool, 'new', 2, new Set(['n2', 'n4'])))).toEqual([]);
  });

  it('counts nodes already unavailable, and skips nodes on the image or degraded', () => {
    const pool = [
      node('n1', 'a', { ready: false }),
      node('n2', 'a', { currentImage: 'new', state: 'Done' }),
      node('n3', 'a', { state: 'Degraded' }),
      node('n4', 'b'),
      node('n5', 'b'),
    ];
    // n1 (NotReady) and n3 (Degraded) are unavailable: with 3 allowed, one more may start.
    expect(names(nextCandidates(pool, 'new', 3, new Set()))).toEqual(['n4']);
    expect(names(nextCandidates(pool, 'new', 2, new Set()))).toEqual([]);
  });
});

describe('the effective image of a pool', () => {
  it('is the base image until a MachineConfig overrides it; the last by name wins', () => {
    expect(effectiveOsImage('quay.io/base@' + DIGEST, [])).toEqual({
      from: 'base',
      image: 'quay.io/base@' + DIGEST,
    });
    expect(
      effectiveOsImage('base', [
        { name: '99-z-custom', osImageURL: 'z' },
        { name: '00-worker' },
        { name: '50-a-custom', osImageURL: 'a' },
        { name: '99-zz-empty', osImageURL: ' ' },
      ]),
    ).toEqual({ from: 'MachineConfig 99-z-custom', image: 'z' });
    expect(effectiveOsImage(undefined, [])).toBeUndefined();
  });
});

describe('image references', () => {
  it('parses registry, repository, tag and digest', () => {
    expect(parseImageReference(`quay.io/org/os@${DIGEST}`)).toEqual({
      registry: 'quay.io',
      repository: 'org/os',
      digest: DIGEST,
    });
    expect(parseImageReference('registry.local:5000/os:4.19')).toEqual({
      registry: 'registry.local:5000',
      repository: 'os',
      tag: '4.19',
    });
    expect(parseImageReference('localhost/os:1')).toMatchObject({
      registry: 'localhost',
      repository: 'os',
    });
    expect(parseImageReference('org/os:1')).toMatchObject({
      registry: 'docker.io',
      repository: 'org/os',
    });
  });

  it('refuses what no node could pull, saying why', () => {
    expect(parseImageReference('quay.io/Org/os:1')).toEqual({
      error: expect.stringMatching(/not an image reference/),
    });
    expect(parseImageReference('Org/os:1')).toEqual({ error: expect.stringMatching(/lowercase/) });
    expect(parseImageReference('quay.io/os@sha256:abc')).toEqual({
      error: expect.stringMatching(/not an image reference/),
    });
    expect(parseImageReference(`quay.io/os@sha512:${'ab'.repeat(64)}`)).toEqual({
      error: expect.stringMatching(/sha256/),
    });
    expect(parseImageReference('quay.io/os:1; rm -rf /')).toEqual({
      error: expect.stringMatching(/not an image reference/),
    });
    expect(parseImageReference(`quay.io/${'a'.repeat(250)}:1`)).toEqual({
      error: expect.stringMatching(/longer than 255/),
    });
  });
});

describe('label selectors', () => {
  it('become the query the API server selects by', () => {
    expect(labelSelectorQuery(undefined)).toBe('');
    expect(
      labelSelectorQuery({
        matchLabels: { 'node-role.kubernetes.io/worker': '' },
        matchExpressions: [
          { key: 'zone', operator: 'In', values: ['a', 'b'] },
          { key: 'gpu', operator: 'NotIn', values: ['yes'] },
          { key: 'pool', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('node-role.kubernetes.io/worker=,zone in (a,b),gpu notin (yes),pool,!legacy');
  });
});
