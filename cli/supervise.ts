// Keeps a process running under `hostflow start`: restarted with back-off whenever it exits
// (see spawnManaged's `restart`), its log lines shown as they come, readably (pretty-log.ts).
import { spawnManaged, waitFor } from '../local-stack/process.js';
import { prettyLine } from './pretty-log.js';

export interface Supervised {
  ready(pattern: RegExp): Promise<void>;
  stop(): Promise<void>;
}

export function supervise(
  name: string,
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; logFile: string; nameWidth?: number },
): Supervised {
  const { nameWidth, ...spawnOptions } = options;
  const proc = spawnManaged(name, command, args, {
    ...spawnOptions,
    restart: true,
    echo: (line) => console.log(prettyLine(line, name, nameWidth)),
  });
  return {
    ready: async (pattern) => {
      await waitFor(`${name} to start`, () => (pattern.test(proc.tail(50)) ? true : undefined), {
        timeoutMs: 120_000,
      });
    },
    stop: () => proc.stop(),
  };
}
