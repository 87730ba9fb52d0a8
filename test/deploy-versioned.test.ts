// The install with Worker Versioning (deploy/overlays/versioned, docs/deploy.md "Upgrading and
// rolling back"): the example install, but its worker runs as one Deployment per build. Rendered
// with kubectl's kustomize and checked by the real API server (dry run), as an operator's upgrade
// has it: the running build, then a second build beside it.
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { V1ConfigMap, V1Deployment } from '@kubernetes/client-node';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../local-stack/paths.js';
import { testEnv } from './support/env.js';
import {
  kubectl,
  manifestFile,
  ofKind,
  renderManifests,
  type Manifest,
} from './support/manifests.js';

const WORKER = 'app.kubernetes.io/component';
let example: Manifest[];

beforeAll(async () => {
  example = await renderManifests('deploy/overlays/example');
});

/** The overlay with builds/v2 beside builds/v1, in a copy of deploy/, as step 1 of an upgrade. */
async function withSecondBuild(): Promise<Manifest[]> {
  const copy = mkdtempSync(join(testEnv('stateDir'), 'deploy-'));
  cpSync(join(REPO_ROOT, 'deploy'), copy, {
    recursive: true,
    filter: (path) => !/\/(image|runner-image|kube-apiserver|registry)(\/|$)/.test(path),
  });
  const overlay = join(copy, 'overlays', 'versioned');
  cpSync(join(overlay, 'builds', 'v1'), join(overlay, 'builds', 'v2'), { recursive: true });
  const build = join(overlay, 'builds', 'v2', 'kustomization.yaml');
  writeFileSync(
    build,
    readFileSync(build, 'utf8')
      .replace('nameSuffix: -v1', 'nameSuffix: -v2')
      .replace('hostflow.dev/build: v1', 'hostflow.dev/build: v2')
      .replace('value: v1 }', 'value: v2 }')
      .replace('newTag: 1.0.0', 'newTag: 1.1.0'),
  );
  const main = join(overlay, 'kustomization.yaml');
  writeFileSync(
    main,
    readFileSync(main, 'utf8').replace('  - builds/v1\n', '  - builds/v1\n  - builds/v2\n'),
  );
  return renderManifests(overlay);
}

const workers = (objects: Manifest[]) =>
  (ofKind(objects, 'Deployment') as unknown as V1Deployment[]).filter(
    (d) => d.spec?.selector.matchLabels?.[WORKER] === 'worker',
  );

/** Everything but the worker's Deployments and budgets and the settings, by kind and name. */
const others = (objects: Manifest[]) =>
  objects
    .filter(
      ({ kind, metadata: { name } }) =>
        !(
          ['Deployment', 'PodDisruptionBudget'].includes(kind) && name.startsWith('hostflow-worker')
        ) && !(kind === 'ConfigMap' && name.startsWith('hostflow-settings')),
    )
    .map((o) => `${o.kind}/${o.metadata.name}`)
    .sort();

describe('the install with Worker Versioning', () => {
  it('is the example install with one worker Deployment per build, polling as that build of the deployment hostflow', async () => {
    const objects = await renderManifests('deploy/overlays/versioned');
    await kubectl(['apply', '-f', manifestFile(ofKind(objects, 'Namespace'))]);
    const { stdout } = await kubectl(['apply', '--dry-run=server', '-f', manifestFile(objects)]);
    expect(stdout.trim().split('\n')).toHaveLength(objects.length);
    expect(others(objects)).toEqual(others(example));
    // No unversioned worker: each build's own, selected by its build.
    const [v1, ...rest] = workers(objects);
    expect(rest).toEqual([]);
    expect(v1!.metadata!.name).toBe('hostflow-worker-v1');
    expect(v1!.spec!.selector.matchLabels).toEqual({
      [WORKER]: 'worker',
      'hostflow.dev/build': 'v1',
    });
    const container = v1!.spec!.template.spec!.containers[0]!;
    expect(container.env).toContainEqual({ name: 'HOSTFLOW_BUILD_ID', value: 'v1' });
    const settings = ofKind(objects, 'ConfigMap') as unknown as V1ConfigMap[];
    const read = settings.find((c) =>
      container.envFrom?.some((from) => from.configMapRef?.name === c.metadata!.name),
    );
    expect(read?.data?.HOSTFLOW_WORKER_DEPLOYMENT).toBe('hostflow');
    const budgets = ofKind(objects, 'PodDisruptionBudget').map((o) => o.metadata.name);
    expect(budgets).toContain('hostflow-worker-v1');
    expect(budgets).not.toContain('hostflow-worker');
  });

  it('runs a second build beside the first for an upgrade: its own name, selector, image and build id, the same settings', async () => {
    const objects = await withSecondBuild();
    const { stdout } = await kubectl(['apply', '--dry-run=server', '-f', manifestFile(objects)]);
    expect(stdout.trim().split('\n')).toHaveLength(objects.length);
    const builds = workers(objects).map((d) => {
      const container = d.spec!.template.spec!.containers[0]!;
      return {
        name: d.metadata!.name,
        build: d.spec!.selector.matchLabels!['hostflow.dev/build'],
        image: container.image,
        buildId: container.env?.find((e) => e.name === 'HOSTFLOW_BUILD_ID')?.value,
        settings: container.envFrom?.map((from) => from.configMapRef?.name ?? from.secretRef?.name),
      };
    });
    expect(builds.map(({ settings: _, ...build }) => build)).toEqual([
      {
        name: 'hostflow-worker-v1',
        build: 'v1',
        image: 'registry.example.com/platform/hostflow:1.0.0',
        buildId: 'v1',
      },
      {
        name: 'hostflow-worker-v2',
        build: 'v2',
        image: 'registry.example.com/platform/hostflow:1.1.0',
        buildId: 'v2',
      },
    ]);
    expect(builds[0]!.settings).toEqual(builds[1]!.settings);
  });
});
