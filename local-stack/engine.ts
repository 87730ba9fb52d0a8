// hostflow's own processes (worker, bridge) started as deployed: `node <ENGINE_SCRIPTS[kind]>`
// with settings in the environment. Used by the tests, the benchmarks and `hostflow start`.
import { join } from 'node:path';
import { ensureBridgeBundle } from '../workers/bundle-bridge.js';
import { ENGINE_ENV, ENGINE_NODE_FLAGS, ENGINE_SCRIPTS, type EngineKind } from './defaults.js';
import { REPO_ROOT } from './paths.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';

export type { EngineKind };

const READY_LINE: Record<EngineKind, string> = { worker: 'polling', bridge: 'watching' };

export interface EngineProcess extends ManagedProcess {
  /** SIGKILL, no clean shutdown: a crash. A restarted process resolves once it is back. */
  kill(): Promise<void>;
}

/** This process's one check of the bridge's bundle (workers/bundle-bridge.ts). */
let bridgeBundleChecked: Promise<void> | undefined;

/**
 * How `node` runs a worker or a bridge as deployed: its flags and script, and the environment it
 * needs beyond its settings. For the bridge, its bundle is first built if stale, checked once per
 * process.
 */
export async function engineCommand(
  kind: EngineKind,
  log?: (line: string) => void,
): Promise<{ args: string[]; env: Record<string, string> }> {
  if (kind === 'bridge') {
    bridgeBundleChecked ??= ensureBridgeBundle({ log }).catch((err: unknown) => {
      bridgeBundleChecked = undefined; // a failed build is tried again by the next start
      throw err;
    });
    await bridgeBundleChecked;
  }
  return {
    args: [...ENGINE_NODE_FLAGS[kind], join(REPO_ROOT, ENGINE_SCRIPTS[kind])],
    env: ENGINE_ENV[kind],
  };
}

export async function startEngineProcess(
  kind: EngineKind,
  env: NodeJS.ProcessEnv,
  options: { name?: string; logFile?: string; restart?: boolean } = {},
): Promise<EngineProcess> {
  const name = options.name ?? kind;
  const command = await engineCommand(kind);
  const proc = spawnManaged(name, process.execPath, command.args, {
    env: { ...process.env, ...command.env, ...env },
    logFile: options.logFile,
    restart: options.restart,
  });
  const engine: EngineProcess = {
    name,
    get pid() {
      return proc.pid;
    },
    exited: proc.exited,
    tail: proc.tail,
    stop: proc.stop,
    async kill() {
      const pid = proc.pid;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
      if (!options.restart) return void (await proc.exited);
      await waitFor(`${name} to come back`, () => (proc.pid !== pid ? true : undefined), {
        timeoutMs: 120_000,
      });
    },
  };
  await waitFor(
    `${name} to start`,
    () => (proc.tail(50).includes(READY_LINE[kind]) ? true : undefined),
    {
      process: proc,
      timeoutMs: 60_000,
    },
  );
  return engine;
}
