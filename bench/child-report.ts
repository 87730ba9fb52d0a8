// Running a benchmark (or the side-by-side harness's driver) as a child process: its report is
// the last line of its output that is a JSON object.
import { spawn } from 'node:child_process';

export interface ChildReport {
  /** The report, when it exited 0 and printed one. */
  line?: string;
  code: number | null;
  /** Its last line on stderr (empty when `echo`ed to ours): why it failed, usually. */
  lastError: string;
}

/** Runs Node with `args`, `env` added to ours; `echo` passes its stderr through as it goes. */
export function runForReport(
  args: string[],
  env: Record<string, string>,
  echo = false,
): Promise<ChildReport> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', echo ? 'inherit' : 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => {
      const line = stdout
        .trim()
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{'));
      const lastError = stderr.trim().split('\n').pop() ?? '';
      resolve({ ...(code === 0 && line ? { line } : {}), code, lastError });
    });
  });
}
