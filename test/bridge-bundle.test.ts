// The bridge runs as one bundled file (workers/bundle-bridge.ts), as in the image: the suite's
// bridges are that bundle, rebuilt whenever a file it was built from changes.
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BRIDGE_BUNDLE, ENGINE_NODE_FLAGS } from '../local-stack/defaults.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { bridgeBundleIsStale } from '../workers/bundle-bridge.js';

describe('the bridge bundle', () => {
  it('is what the suite runs, built from the current sources', () => {
    expect(bridgeBundleIsStale(join(REPO_ROOT, BRIDGE_BUNDLE))).toBe(false);
  });

  it('runs the bridge as its main module: without a kubeconfig it says which to set', () => {
    const home = mkdtempSync(join(tmpdir(), 'hostflow-no-home-'));
    try {
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home };
      const run = spawnSync(
        process.execPath,
        [...ENGINE_NODE_FLAGS.bridge, join(REPO_ROOT, BRIDGE_BUNDLE)],
        { env, encoding: 'utf8', timeout: 30_000 },
      );
      expect(run.status).toBe(1);
      expect(run.stdout).toContain('hostflow bridge: no kubeconfig: set KUBECONFIG');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('counts as stale when a file it was built from changes or goes, or nothing says what', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hostflow-bundle-'));
    try {
      const bundle = join(dir, 'bundle.mjs');
      const input = join(dir, 'input.js');
      writeFileSync(input, 'export {};');
      writeFileSync(bundle, '');
      expect(bridgeBundleIsStale(bundle)).toBe(true); // no list of its inputs
      writeFileSync(`${bundle}.inputs.json`, JSON.stringify([input]));
      const built = new Date(Date.now() - 60_000);
      utimesSync(input, new Date(built.getTime() - 1000), new Date(built.getTime() - 1000));
      utimesSync(bundle, built, built);
      expect(bridgeBundleIsStale(bundle)).toBe(false);
      utimesSync(input, new Date(), new Date());
      expect(bridgeBundleIsStale(bundle)).toBe(true);
      rmSync(input);
      expect(bridgeBundleIsStale(bundle)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
