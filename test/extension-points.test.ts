// docs/extending.md held to the tree: every cloud provider and every workflow family is in each
// place the checklists mark "(checked)", and every path the page names exists. Pure: it reads the
// registries and the repository's files, and starts nothing.
import { describe, expect, it } from '@jest/globals';
import { CLOUD_PROVIDER_OPENERS } from '../activities/cloud/registry.js';
import { CLOUD_PROVIDERS, PROVIDER_TYPES } from '../platform-config/cloud-providers.js';
import { FAMILIES } from '../shared/families.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import {
  codeSpans,
  filesIn,
  foldersIn,
  repoHas,
  repoText,
  section,
  workflowExports,
} from './support/repo-files.js';

/** Folders of workflows/ that hold no family. */
const NOT_FAMILIES = ['kit'];

const families = foldersIn('workflows').filter((name) => !NOT_FAMILIES.includes(name));
const workflowIndex = repoText('workflows/index.ts');
/** Each workflow the bundle exports, with its family's folder. */
const exported = workflowExports().map(({ name, from }) => ({ name, family: from.split('/')[1] }));

describe('cloud providers (docs/extending.md, "How to add a cloud provider")', () => {
  const prefixes = PROVIDER_TYPES.map((type) => CLOUD_PROVIDERS[type].providerIdPrefix);

  it('every provider with a spec has an adapter, and no adapter is without a spec', () => {
    expect(Object.keys(CLOUD_PROVIDER_OPENERS).sort()).toEqual([...PROVIDER_TYPES].sort());
  });

  it.each(PROVIDER_TYPES)('%s has its adapter file, of its kind, and a dynamic test', (type) => {
    expect(repoText(`activities/cloud/${type}.ts`)).toContain(`readonly kind = '${type}' as const`);
    expect(repoHas(`test/dynamic-${type}.test.ts`)).toBe(true);
  });

  it('the type row of docs/taskruns.md lists every provider', () => {
    const platforms = section(repoText('docs/taskruns.md'), '## Cloud platforms');
    const typeRow = platforms.split('\n').find((line) => line.startsWith('| `type`'));
    expect(codeSpans(typeRow!.split('|')[3]!).sort()).toEqual([...PROVIDER_TYPES].sort());
  });

  it("docs/machines.md names every provider's providerID", () => {
    for (const doc of ['docs/machines.md']) {
      const named = codeSpans(repoText(doc));
      expect({ doc, missing: prefixes.filter((p) => !named.some((s) => s.startsWith(p))) }).toEqual(
        { doc, missing: [] },
      );
    }
  });
});

describe('workflow families (docs/extending.md, "How to add a workflow family")', () => {
  const contracts = filesIn('shared/contracts').map((file) => file.replace(/\.ts$/, ''));
  const contractText = (family: string) => repoText(`shared/contracts/${family}.ts`);

  it('every family folder has a contract, and every contract a family folder', () => {
    expect(contracts).toEqual(families);
  });

  it.each(families)('%s: the bundle exports its workflow', (family) => {
    expect(exported.filter((w) => w.family === family)).not.toEqual([]);
  });

  it.each(families)('%s: its contract builds the id and kind of what it starts', (family) => {
    expect(contractText(family)).toMatch(/WORKFLOW_ID\.\w+\(/);
    expect(contractText(family)).toMatch(/KIND\.\w+/);
  });

  it.each(families)('%s: its proxies file is named for what it holds', (family) => {
    expect(filesIn(`workflows/${family}`)).not.toContain('activities.ts');
  });

  it('every exported workflow is held to its contract and has a starter', () => {
    for (const { name, family } of exported) {
      const started =
        contractText(family).includes(`workflowType: '${name}'`) ||
        filesIn(`workflows/${family}`).some((file) =>
          new RegExp(`startChild\\(\\s*${name}\\b`).test(repoText(`workflows/${family}/${file}`)),
        );
      expect({ name, served: workflowIndex.includes(`typeof ${name}>`), started }).toEqual({
        name,
        served: true,
        started: true,
      });
    }
  });

  it('every workflow id has its row in docs/architecture.md and a recorded history', () => {
    const idsTable = section(repoText('docs/architecture.md'), '### Workflow ids');
    const documented = codeSpans(idsTable).flatMap((cell) => cell.split(', '));
    const shape = (id: string) => id.split('/').map((part, i) => (i === 0 ? part : '*'));
    const recorded = Object.values(
      JSON.parse(repoText('test/histories/index.json')) as Record<string, string>,
    ).map((id) => id.split('/')[0]);
    for (const [key, build] of Object.entries(WORKFLOW_ID)) {
      const id = (build as (...parts: string[]) => string)(
        ...Array<string>(build.length).fill('x'),
      );
      expect({
        key,
        documented: documented.some((doc) => shape(doc).join('/') === shape(id).join('/')),
        recorded: recorded.includes(shape(id)[0]),
      }).toEqual({ key, documented: true, recorded: true });
    }
  });

  it('every kind is given to some workflow', () => {
    const starters = [
      ...contracts.map((family) => contractText(family)),
      ...families.flatMap((family) =>
        filesIn(`workflows/${family}`).map((file) => repoText(`workflows/${family}/${file}`)),
      ),
    ].join('\n');
    const unused = Object.keys(KIND).filter((key) => !starters.includes(`KIND.${key}`));
    expect(unused).toEqual([]);
  });

  it('every search attribute is registered in temporal-dev.yaml', () => {
    const registered = repoText('temporal-dev.yaml');
    const missing = Object.values(SA).filter((key) => !registered.includes(`  ${key.name}: `));
    expect(missing).toEqual([]);
  });

  it('every activity factory is registered, every ingest started, every CRD deployed', () => {
    const activities = repoText('activities/index.ts');
    const factoryFiles = ['activities', ...foldersIn('activities').map((f) => `activities/${f}`)]
      .flatMap((folder) => filesIn(folder).map((file) => `${folder}/${file}`))
      .concat(filesIn('locks').map((file) => `locks/${file}`));
    for (const file of factoryFiles) {
      for (const [, factory] of repoText(file).matchAll(/export function (create\w+Activities)/g)) {
        if (file === 'activities/index.ts') continue;
        expect({ factory, registered: activities.includes(`${factory}(`) }).toEqual({
          factory,
          registered: true,
        });
      }
    }
    const bridge = repoText('workers/bridge.ts');
    for (const ingest of filesIn('k8s-bridge').filter((file) => file.endsWith('-ingest.ts'))) {
      expect({
        ingest,
        started: bridge.includes(`'../k8s-bridge/${ingest.replace(/ts$/, 'js')}'`),
      }).toEqual({ ingest, started: true });
    }
    // Each family is a component of the example overlay, and takes in every file in its folder.
    const example = repoText('deploy/overlays/example/kustomization.yaml');
    expect(foldersIn('deploy/families').sort()).toEqual([...FAMILIES].sort());
    for (const family of FAMILIES) {
      const component = repoText(`deploy/families/${family}/kustomization.yaml`);
      expect({ family, inExample: example.includes(`  - ../../families/${family}\n`) }).toEqual({
        family,
        inExample: true,
      });
      for (const file of filesIn(`deploy/families/${family}`)) {
        if (file === 'kustomization.yaml') continue;
        expect({ file, deployed: component.includes(`  - ${file}\n`) }).toEqual({
          file,
          deployed: true,
        });
      }
    }
  });

  it.each(families)('%s: docs/architecture.md names its folder in "The families"', (family) => {
    expect(section(repoText('docs/architecture.md'), '## The families')).toContain(
      `workflows/${family}/`,
    );
  });
});

describe('docs/extending.md', () => {
  it('names only paths that exist, or the example it adds', () => {
    const example = /gcp|widget/i;
    const named = codeSpans(repoText('docs/extending.md')).filter((span) =>
      /^[\w.-]+\/[\w./-]*$/.test(span),
    );
    const missing = named.filter((path) => !example.test(path) && !repoHas(path));
    expect(missing).toEqual([]);
    expect(named.length).toBeGreaterThan(40);
  });
});
