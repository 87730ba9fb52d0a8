// Each family's activities (activities/family-activities.ts) are every activity its workflows
// can call: a worker of some families registers only theirs, so one missing here would fail a
// workflow of that family on such an install alone. What a workflow can call is read from its
// source: the activity types (`…Activities`) imported from activities/ and locks/ by the modules
// its workflow functions reach through their relative imports, as they type their proxies.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { REPO_ROOT } from '../local-stack/paths.js';
import { FAMILY_ACTIVITIES } from '../activities/family-activities.js';
import { FAMILIES } from '../shared/families.js';
import { FAMILY_WORKFLOWS } from '../workers/workflow-code.js';
import { workflowExports } from './support/repo-files.js';

const IMPORT = /import\s+(type\s+)?\{([^}]*)\}\s*from\s*'([^']+)'/g;

/** The module of each workflow type, as workflows/index.ts exports it. */
function workflowModules(): Map<string, string> {
  const index = join(REPO_ROOT, 'workflows/index.ts');
  return new Map(workflowExports().map(({ name, from }) => [name, sourceOf(index, from)]));
}

const sourceOf = (from: string, specifier: string) =>
  resolve(dirname(from), specifier).replace(/\.js$/, '.ts');

/** Activity types the modules reachable from `entry` import, and what they reach. */
function activityTypesFrom(entry: string): Set<string> {
  const types = new Set<string>();
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    for (const [, typeOnly, names, specifier] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      if (!specifier!.startsWith('.')) continue;
      const target = sourceOf(file, specifier!);
      const where = relative(REPO_ROOT, target);
      if (/^(activities|locks)\//.test(where)) {
        for (const raw of names!.split(',')) {
          const name = raw.replace(/^\s*type\s+/, '').trim();
          if (/^[A-Z]\w*Activities$/.test(name) && (typeOnly || /^\s*type\s/.test(raw)))
            types.add(name);
        }
      }
      // Workflow-side code only: activities/ runs in the worker, never in a workflow.
      if (!where.startsWith('activities/')) queue.push(target);
    }
  }
  return types;
}

describe("each family's activities", () => {
  const modules = workflowModules();

  it.each(FAMILIES.map((family) => [family]))(
    '%s registers every activity type its workflows call',
    (family) => {
      const used = new Set<string>();
      for (const type of FAMILY_WORKFLOWS[family]) {
        const module = modules.get(type);
        expect(module).toBeDefined();
        for (const name of activityTypesFrom(module!)) used.add(name);
      }
      const listed: readonly string[] = FAMILY_ACTIVITIES[family];
      const missing = [...used].filter((name) => !listed.includes(name));
      expect({ family, missing }).toEqual({ family, missing: [] });
    },
  );

  it('reads the activity types of a workflow from its source', () => {
    // The TaskRun workflow's proxies, through its kit: delivery, SSH clean-up, the allocator.
    const taskRun = activityTypesFrom(modules.get('taskRunWorkflow')!);
    for (const name of ['DeliveryActivities', 'SshActivities', 'TemporalActivities'])
      expect(taskRun).toContain(name);
  });
});
