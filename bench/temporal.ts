// The Temporal a benchmark runs on: the dev server, or with BENCH_TEMPORAL=server the
// production-shaped one (local-stack/temporal-server.ts: the Temporal server on PostgreSQL, four
// services apart). Both in throwaway state on random ports; the figures of the two are compared
// in docs/performance.md, "On a production-shaped Temporal".
import { startTemporalDevServer } from '../local-stack/temporal.js';
import { startTemporalServer } from '../local-stack/temporal-server.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type BenchTemporalKind = 'dev' | 'server';

export function benchTemporalKind(): BenchTemporalKind {
  const kind = process.env.BENCH_TEMPORAL ?? 'dev';
  if (kind !== 'dev' && kind !== 'server') {
    throw new Error(`BENCH_TEMPORAL=${kind}: use dev (the default) or server`);
  }
  return kind;
}

export async function startBenchTemporal(logDir?: string): Promise<{
  kind: BenchTemporalKind;
  address: string;
  namespace: string;
  stop(): Promise<void>;
}> {
  const kind = benchTemporalKind();
  const temporal =
    kind === 'server'
      ? await startTemporalServer({
          stateDir: mkdtempSync(join(tmpdir(), 'hostflow-bench-temporal-')),
          persist: false,
          fixedPorts: false,
          logDir,
        })
      : await startTemporalDevServer({ persist: false, fixedPorts: false, logDir });
  return { kind, address: temporal.address, namespace: temporal.namespace, stop: temporal.stop };
}
