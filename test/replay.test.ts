// Recorded histories of real runs (captured with `temporal workflow show -o json`) must replay
// against the current workflow code: a non-deterministic change fails here, not in production.
// Record new ones the same way and list them in test/histories/index.json. Replays run through
// `hostflow replay`, the command on-call uses.
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../local-stack/paths.js';
import { testEnv } from './support/env.js';

const run = promisify(execFile);
const dir = join(REPO_ROOT, 'test/histories');
const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as Record<string, string>;

function replay(file: string, workflowId: string) {
  return run(
    process.execPath,
    [join(REPO_ROOT, 'dist/cli/hostflow.js'), 'replay', '--workflow-id', workflowId, file],
    {
      env: { ...process.env, HOSTFLOW_WORKFLOW_BUNDLE: testEnv('workflowBundle') },
    },
  );
}

describe('replay of recorded histories', () => {
  it('has recorded histories to replay', () => {
    expect(Object.keys(index).length).toBeGreaterThanOrEqual(2);
  });

  it.each(Object.entries(index))('%s replays deterministically', async (file, workflowId) => {
    const { stdout } = await replay(join(dir, file), workflowId);
    expect(stdout).toContain('replays deterministically');
  });

  it('detects a history that the code would not produce', async () => {
    // Rename the first local activity in its marker: the code schedules resolveTaskRunPlatform,
    // the tampered history claims another activity ran there.
    const [file, workflowId] = Object.entries(index)[0]!;
    const history = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
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
    await expect(replay(tampered, workflowId)).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/does not replay: .*nondeterminism error/i),
    });
  });
});
