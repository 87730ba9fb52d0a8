// Keeps the worker and bridge running under `hostflow start`: a crashed process is restarted
// with back-off, and its last output is shown.
import { spawnManaged, waitFor, type ManagedProcess } from '../local-stack/process.js';

export interface Supervised {
  ready(pattern: RegExp): Promise<void>;
  stop(): Promise<void>;
}

const MAX_BACKOFF_MS = 30_000;

export function supervise(
  name: string,
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; logFile: string },
): Supervised {
  let current: ManagedProcess;
  let stopping = false;
  let restarts = 0;
  const launch = (): void => {
    const started = Date.now();
    current = spawnManaged(name, command, args, options);
    void current.exited.then((code) => {
      if (stopping) return;
      if (Date.now() - started > 60_000) restarts = 0;
      const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** restarts++);
      console.error(
        `hostflow: ${name} exited (code ${code}); restarting in ${delay} ms. Last output:\n${current.tail(15)}`,
      );
      setTimeout(() => stopping || launch(), delay);
    });
  };
  launch();
  return {
    ready: async (pattern) => {
      await waitFor(`${name} to start`, () => (pattern.test(current.tail(50)) ? true : undefined), {
        timeoutMs: 120_000,
      });
    },
    async stop() {
      stopping = true;
      await current.stop();
    },
  };
}
