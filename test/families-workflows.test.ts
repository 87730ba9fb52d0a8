// Each family's workflow types (workers/workflow-code.ts) cover every workflow the worker can
// serve: a workflow added to workflows/index.ts without a family would be registered by no
// install that chooses its families, and its objects would wait for ever.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../local-stack/paths.js';
import { FAMILIES } from '../shared/families.js';
import { familyWorkflowTypes } from '../workers/workflow-code.js';

/** The workflow types workflows/index.ts exports, read from its source. */
function indexExports(): string[] {
  const source = readFileSync(join(REPO_ROOT, 'workflows/index.ts'), 'utf8');
  return [...source.matchAll(/^export \{ (\w+) \} from '\.\/[^']+';$/gm)].map(([, name]) => name!);
}

describe("each family's workflows", () => {
  it('together are every workflow of the worker', () => {
    const all = indexExports();
    expect(all.length).toBeGreaterThan(10);
    expect(familyWorkflowTypes(FAMILIES).sort()).toEqual(all.sort());
  });
});
