// docs/architecture.md held to the tree: its "Repository layout" table lists every top-level
// source folder and every folder of workflows/ and activities/, and nothing that is gone; every
// path it names from the repository's root exists. Pure: it reads files and starts nothing.
import { describe, expect, it } from '@jest/globals';
import {
  codeSpans,
  firstCells,
  foldersIn,
  repoHas,
  repoText,
  section,
} from './support/repo-files.js';

/** Top-level folders that hold no source: installed, built or written by runs (.gitignore). */
const NOT_SOURCE = ['node_modules', 'dist', 'test-artifacts'];
/** Paths "Layers" names for the choice it did not make (a locks/ folder in each layer). */
const NOT_CHOSEN = ['activities/locks/', 'workflows/kit/locks.ts', 'k8s-bridge/locks/'];

const architecture = repoText('docs/architecture.md');
const layout = section(architecture, '## Repository layout');
/** The folders the layout table's rows are about, as `a/` or `a/b/`. */
const listed = firstCells(layout.split('\n### ')[0]!).flatMap(codeSpans);
const topLevel = foldersIn('.').filter((name) => !NOT_SOURCE.includes(name));

describe('docs/architecture.md, "Repository layout"', () => {
  it('lists folders only, each of which exists', () => {
    expect(listed.filter((path) => !path.endsWith('/'))).toEqual([]);
    expect(listed.filter((path) => !repoHas(path))).toEqual([]);
  });

  it('lists every top-level source folder', () => {
    expect(topLevel.filter((name) => !listed.includes(`${name}/`))).toEqual([]);
  });

  it.each(['workflows', 'activities'])('lists every folder of %s/', (parent) => {
    const folders = foldersIn(parent).map((name) => `${parent}/${name}/`);
    expect(folders.filter((path) => !listed.includes(path))).toEqual([]);
  });
});

describe('docs/architecture.md', () => {
  it('names only paths that exist', () => {
    const roots = new Set(topLevel);
    const paths = codeSpans(architecture).filter(
      (span) => /^[\w.-]+\/[\w./-]*$/.test(span) && roots.has(span.split('/')[0]!),
    );
    expect(paths.filter((path) => !repoHas(path) && !NOT_CHOSEN.includes(path))).toEqual([]);
    expect(paths.length).toBeGreaterThan(100);
  });
});
