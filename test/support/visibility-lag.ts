// Visibility that lags on demand, on a production-shaped Temporal (local-stack/temporal-server.ts):
// a transaction holds an EXCLUSIVE lock on its visibility table, so the history service's
// visibility writes wait (and retry) while reads still answer, with what was indexed before.
// Nothing is faked: the server simply cannot index, as on a slow or overloaded store.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { psqlCommand } from '../../local-stack/postgres.js';
import type { TemporalServer } from '../../local-stack/temporal-server.js';

export interface HeldVisibility {
  /** Commits the transaction: the server indexes what waited. Once is enough. */
  release(): Promise<void>;
}

export async function holdVisibilityWrites(server: TemporalServer): Promise<HeldVisibility> {
  const { command, args, env } = psqlCommand(server.database.postgres, server.database.visibility);
  const psql = spawn(command, [...args, '-AtXq'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  psql.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  psql.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(psql, 'exit');
  psql.stdin.write("BEGIN;\nLOCK TABLE executions_visibility IN EXCLUSIVE MODE;\nSELECT 'held';\n");
  const deadline = Date.now() + 30_000;
  while (!output.includes('held')) {
    if (psql.exitCode !== null || Date.now() > deadline) {
      psql.kill('SIGKILL');
      throw new Error(`could not lock the visibility table: ${output.trim() || 'no answer'}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  let released: Promise<unknown> | undefined;
  return {
    async release() {
      if (!released) {
        psql.stdin.end('COMMIT;\n');
        released = exited;
      }
      await released;
    },
  };
}
