// Each family's workflow types (workers/workflow-code.ts) cover every workflow the worker can
// serve: a workflow added to workflows/index.ts without a family would be registered by no
// install that chooses its families, and its objects would wait for ever.
import { describe, expect, it } from '@jest/globals';
import { FAMILIES } from '../shared/families.js';
import { familyWorkflowTypes } from '../workers/workflow-code.js';
import { workflowExports } from './support/repo-files.js';

describe("each family's workflows", () => {
  it('together are every workflow of the worker', () => {
    const all = workflowExports().map(({ name }) => name);
    expect(all.length).toBeGreaterThan(10);
    expect(familyWorkflowTypes(FAMILIES).sort()).toEqual(all.sort());
  });
});
