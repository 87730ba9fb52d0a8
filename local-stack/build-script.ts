// The local stack's one way to run a build script of the repository (deploy/*/build.sh,
// local-stack/*/build.sh): each builds once, caches what it built outside the repo, and prints
// where on its last lines. A failure says what was being built and ends with the script's own
// last words.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './paths.js';

const run = promisify(execFile);

/** Runs `script` (a path in the repository) and returns its last `lines` lines of output. */
export async function runBuildScript(
  what: string,
  script: string,
  args: string[] = [],
  lines = 1,
): Promise<string[]> {
  try {
    const { stdout } = await run('bash', [join(REPO_ROOT, script), ...args], {
      maxBuffer: 64 << 20,
    });
    return stdout.trim().split('\n').slice(-lines);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${what}: build failed: ${(e.stderr || e.message).trim().slice(-2000)}`, {
      cause: err,
    });
  }
}
