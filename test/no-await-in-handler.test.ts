// The lint rule hostflow/no-await-in-handler (eslint-rules/no-await-in-handler.js) as the
// repository's eslint.config.js applies it: code linted as if it were at a path in the tree, so
// the rule's registration and the folders it covers are tested too. Pure: no stack, no files.
import { describe, expect, it } from '@jest/globals';
import { refusedBy } from './support/lint-rule.js';

const refused = refusedBy('hostflow/no-await-in-handler');

const PRELUDE = `import { condition, defineSignal, setHandler } from '@temporalio/workflow';
declare const api: { writeStatus(input: unknown): Promise<void> };
const seen = defineSignal<[string]>('seen');
`;

describe('no-await-in-handler', () => {
  it('refuses a handler in workflows/ that awaits an activity, or returns one', async () => {
    const code = `${PRELUDE}export function wire(noted: string[]) {
  setHandler(seen, async (name) => {
    await api.writeStatus(name);
  });
  setHandler(seen, async (name) => api.writeStatus(name));
  setHandler(seen, (name) => {
    noted.push(name);
  });
}
`;
    expect(await refused('workflows/provisioning/provisioning.ts', code)).toEqual([
      'await api.writeStatus(name);',
      'setHandler(seen, async (name) => api.writeStatus(name));',
    ]);
  });

  it('lets a handler wait on condition(), and code outside workflows/ alone', async () => {
    const code = `${PRELUDE}export function wire(done: () => boolean) {
  setHandler(seen, async () => {
    await condition(done);
  });
}
`;
    expect(await refused('workflows/allocator/allocator.ts', code)).toEqual([]);
    const awaiting = `${PRELUDE}setHandler(seen, async (name) => {
  await api.writeStatus(name);
});
`;
    expect(await refused('k8s-bridge/ingest.ts', awaiting)).toEqual([]);
  });
});
