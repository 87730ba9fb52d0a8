// The local stack's child processes: output kept in the log file and the tail, even after exit.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnManaged, waitFor } from '../local-stack/process.js';

describe('a managed process', () => {
  it('keeps output written by a child of the process after the process itself exited', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hostflow-process-'));
    try {
      const logFile = join(dir, 'out.log');
      // The grandchild inherits the pipe and writes once its parent is gone.
      const proc = spawnManaged(
        'late-writer',
        'sh',
        ['-c', 'echo early; (sleep 0.3; echo late) &'],
        {
          logFile,
        },
      );
      expect(await proc.exited).toBe(0);
      await waitFor('the late line in the tail', () =>
        proc.tail().includes('late') ? true : undefined,
      );
      await waitFor('the late line in the log file', () =>
        readFileSync(logFile, 'utf8') === 'early\nlate\n' ? true : undefined,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
