// Each family's workflow types (workers/workflow-code.ts) cover every workflow the worker can
// serve: a workflow added to workflows/index.ts without a family would be registered by no
// install that chooses its families, and its objects would wait for ever.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../local-stack/paths.js';
import { FAMILIES } from '../shared/families.js';
import { familyWorkflowTypes } from '../workers/workflow-code.js';

/** What workflows/index.ts exports, by name and module, read from its source. */
function indexExports(): Map<string, string> {
  const source = readFileSync(join(REPO_ROOT, 'workflows/index.ts'), 'utf8');
  const found = new Map<string, string>();
  for (const [, name, module] of source.matchAll(/^export \{ (\w+) \} from '\.\/([^']+)';$/gm)) {
    found.set(name!, module!);
  }
  return found;
}

describe("each family's workflows", () => {
  it('together are every workflow of the worker, each from the module that defines it', () => {
    const all = indexExports();
    expect(all.size).toBeGreaterThan(10);
    expect(new Map([...familyWorkflowTypes(FAMILIES)].sort())).toEqual(new Map([...all].sort()));
  });
});
