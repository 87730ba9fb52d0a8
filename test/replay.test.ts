// Recorded histories of real runs (captured with `temporal workflow show -o json`) must replay
// against the current workflow code: a non-deterministic change fails here, not in production.
// Record new ones the same way and list them in test/histories/index.json. Replays run through
// `hostflow replay`, the command on-call uses: all of the index in one worker, bundled once.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../local-stack/paths.js';
import { testEnv } from './support/env.js';
import { RETIRED_PATCHES } from '../shared/retired-patches.js';
import { HOSTFLOW_WORKFLOW_TYPES } from '../cli/upgrade.js';
import { workflowExports } from './support/repo-files.js';

const run = promisify(execFile);
const dir = join(REPO_ROOT, 'test/histories');
const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as Record<string, string>;

function hostflowReplay(args: string[]) {
  return run(process.execPath, [join(REPO_ROOT, 'dist/cli/hostflow.js'), 'replay', ...args], {
    env: { ...process.env, HOSTFLOW_WORKFLOW_BUNDLE: testEnv('workflowBundle') },
    maxBuffer: 16 * 1024 * 1024,
  });
}

const replay = (file: string, workflowId: string) =>
  hostflowReplay(['--workflow-id', workflowId, file]);

/** What `hostflow replay --index` printed, and how it exited. */
async function replayIndex(indexFile: string) {
  return hostflowReplay(['--index', indexFile]).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
}

describe('replay of recorded histories', () => {
  let replayed: Awaited<ReturnType<typeof replayIndex>>;
  beforeAll(async () => {
    replayed = await replayIndex(join(dir, 'index.json'));
  }, 900_000);

  it('has recorded histories to replay, and all of them replay', () => {
    expect(Object.keys(index).length).toBeGreaterThanOrEqual(2);
    const count = Object.keys(index).length;
    expect(replayed.stdout).toContain(`${count} of ${count} histories replay deterministically`);
    expect(replayed.code).toBe(0);
  });

  it('lists every patch of the workflows in docs/workflow-versioning.md, and reuses no retired id', () => {
    const sources = readdirSync(join(REPO_ROOT, 'workflows'), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => readFileSync(join(REPO_ROOT, 'workflows', file), 'utf8'));
    const ids = (text: string) =>
      [...text.matchAll(/PATCH_[A-Z0-9_]+ = '([a-z0-9-]+)'/g)].map((m) => m[1]!);
    const markers = sources.flatMap(ids);
    const doc = readFileSync(join(REPO_ROOT, 'docs/workflow-versioning.md'), 'utf8');
    expect(markers.filter((marker) => !doc.includes(`| \`${marker}\``))).toEqual([]);
    // A 0.x history holds each retired id's marker: a new patch under one would take it for its own.
    expect(markers.filter((marker) => RETIRED_PATCHES.includes(marker))).toEqual([]);
    expect(RETIRED_PATCHES.filter((id) => !doc.includes(`| \`${id}\``))).toEqual([]);
  });

  it('counts every workflow type of the bundle in `hostflow upgrade check`', () => {
    const exported = workflowExports().map(({ name }) => name);
    expect(exported.length).toBeGreaterThan(10);
    expect(exported.filter((type) => !HOSTFLOW_WORKFLOW_TYPES.includes(type))).toEqual([]);
  });

  it.each(Object.entries(index))('%s replays deterministically', (file, workflowId) => {
    expect(replayed.stdout.split('\n')).toContain(
      `hostflow replay: ${file} (${workflowId}) replays deterministically`,
    );
  });

  it('detects a history that the code would not produce', async () => {
    const [, workflowId] = Object.entries(index)[0]!;
    await expect(replay(tamperedHistory(), workflowId)).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/does not replay: .*nondeterminism error/i),
    });
  });

  it('replays the rest of an index, and fails naming each history that does not replay', async () => {
    const [[good, goodId], [, otherId]] = Object.entries(index) as Array<[string, string]>;
    const [firstId] = Object.values(index);
    const state = testEnv('stateDir');
    writeFileSync(join(state, 'good.json'), readFileSync(join(dir, good!)));
    writeFileSync(
      join(state, 'replay-index.json'),
      JSON.stringify({
        'good.json': goodId,
        'missing.json': otherId,
        [tamperedHistory()]: firstId,
      }),
    );
    const { code, stdout, stderr } = await replayIndex(join(state, 'replay-index.json'));
    expect(code).toBe(1);
    expect(stdout).toContain(`hostflow replay: good.json (${goodId}) replays deterministically`);
    expect(stderr).toMatch(/hostflow replay: missing\.json does not replay: cannot read history/);
    expect(stderr).toMatch(
      /hostflow replay: \/.*tampered-history\.json \(.*\) does not replay: .*nondeterminism error/i,
    );
    expect(stdout).toContain('1 of 3 histories replay deterministically');
  });

  it('refuses an index that does not map history files to workflow IDs', async () => {
    const file = join(testEnv('stateDir'), 'bad-index.json');
    writeFileSync(file, JSON.stringify({ 'a.json': '' }));
    const { code, stderr } = await replayIndex(file);
    expect(code).toBe(2);
    expect(stderr).toContain('these have no workflow ID: a.json');
  });
});

/**
 * The first recorded history with the first local activity in its marker renamed: the code
 * schedules resolveTaskRunPlatform, the tampered history claims another activity ran there.
 */
function tamperedHistory(): string {
  const [file] = Object.keys(index);
  const history = JSON.parse(readFileSync(join(dir, file!), 'utf8')) as {
    events: Array<{
      markerRecordedEventAttributes?: {
        details: Record<string, { payloads: Array<{ data: string }> }>;
      };
    }>;
  };
  const marker = history.events.find(
    (e) => e.markerRecordedEventAttributes,
  )!.markerRecordedEventAttributes!;
  const payload = marker.details.data!.payloads[0]!;
  const data = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as {
    activity_type: string;
  };
  expect(data.activity_type).toBe('resolveTaskRunPlatform');
  payload.data = Buffer.from(
    JSON.stringify({ ...data, activity_type: 'someOtherActivity' }),
  ).toString('base64');
  const tampered = join(testEnv('stateDir'), 'tampered-history.json');
  writeFileSync(tampered, JSON.stringify(history));
  return tampered;
}
