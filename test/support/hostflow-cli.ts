// The `hostflow` command as on-call runs it: the built CLI as a child process, with the engine's
// own environment (its Temporal, kubeconfig, engine namespace and task queue).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Description } from '../../cli/describe.js';
import { REPO_ROOT } from '../../local-stack/paths.js';
import { engineEnv, type EngineScope } from './engine.js';

const run = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `hostflow <args>` in `env`; a non-zero exit is a result, not an error. */
export async function hostflowIn(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [join(REPO_ROOT, 'dist/cli/hostflow.js'), ...args],
      { env },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw err;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** `hostflow <args>` with the engine's environment. */
export function hostflowOf(scope: EngineScope, ...args: string[]): Promise<CliResult> {
  return hostflowIn({ ...process.env, ...engineEnv(scope) }, ...args);
}

/** `hostflow describe KIND TARGET -o json`, which must succeed. */
export async function describeJson(
  scope: EngineScope,
  kind: string,
  target: string,
): Promise<Description> {
  const result = await hostflowOf(scope, 'describe', kind, target, '-o', 'json');
  if (result.code !== 0) {
    throw new Error(`hostflow describe ${kind} ${target} exited ${result.code}: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as Description;
}

/** A timeline as `kind name outcome` lines, to look for steps in. */
export function stepsOf(d: Description): string[] {
  return d.timeline.map((s) => `${s.kind} ${s.name ?? ''} ${s.outcome ?? ''}`.trim());
}
