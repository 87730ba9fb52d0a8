// Keeps a process running under `hostflow start`: restarted with back-off whenever it exits
// (see spawnManaged's `restart`), its last output shown.
import { spawnManaged, waitFor } from '../local-stack/process.js';

export interface Supervised {
  ready(pattern: RegExp): Promise<void>;
  stop(): Promise<void>;
}

export function supervise(
  name: string,
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; logFile: string },
): Supervised {
  const proc = spawnManaged(name, command, args, { ...options, restart: true });
  return {
    ready: async (pattern) => {
      await waitFor(`${name} to start`, () => (pattern.test(proc.tail(50)) ? true : undefined), {
        timeoutMs: 120_000,
      });
    },
    stop: () => proc.stop(),
  };
}
