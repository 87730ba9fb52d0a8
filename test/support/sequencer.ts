// The order test files start in: longest first, so the two workers end together instead of one
// running the last long file alone. Jest knows each file's duration only from its own cache, which
// a fresh clone (CI) does not have; it then orders by file size, which put the three dynamic-cloud
// files (5–6 minutes each, small files) last. test/durations.json holds each file's seconds from a
// whole run (refresh it from a run's "PASS dist/test/… (N s)" lines when files are added or
// change much); a file it does not list goes after those it does, by size, as Jest would.
import sequencerModule from '@jest/test-sequencer';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// The package's ESM entry exports the class itself; its types describe the CommonJS build.
const TestSequencer = sequencerModule as unknown as typeof sequencerModule.default;
type Test = Parameters<InstanceType<typeof TestSequencer>['sort']>[0][number];

const DURATIONS_FILE = fileURLToPath(new URL('../../../test/durations.json', import.meta.url));
const DIST = fileURLToPath(new URL('../..', import.meta.url));

function recordedSeconds(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

export default class LongestFirst extends TestSequencer {
  override async sort(tests: Array<Test>): Promise<Array<Test>> {
    const seconds = recordedSeconds();
    const known = (test: Test) => seconds[relative(DIST, test.path)];
    const bySize = await super.sort(tests.filter((test) => known(test) === undefined));
    const longest = tests
      .filter((test) => known(test) !== undefined)
      .sort((a, b) => known(b)! - known(a)!);
    return [...longest, ...bySize];
  }
}
