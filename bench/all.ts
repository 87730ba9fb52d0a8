// Every benchmark in turn, each on a stack of its own: prints the one JSON line each bench
// prints (its figures beside its targets), or {"bench", "error"} for one that failed, and exits
// non-zero if any failed. BENCH_ONLY=local-burst,static-burst runs a subset.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

interface Bench {
  name: string;
  /** The script under bench/, when not `name`: a variant of another bench. */
  script?: string;
  env?: Record<string, string>;
}

const BENCHES: readonly Bench[] = [
  { name: 'local-burst' },
  {
    name: 'local-burst-scaled',
    script: 'local-burst',
    env: { BENCH_WORKERS: '2', BENCH_BRIDGES: '2' },
  },
  { name: 'temporal-floor' },
  { name: 'static-burst' },
  { name: 'allocator-grants' },
  { name: 'dynamic-burst' },
  { name: 'bridge-scale' },
  { name: 'worker-soak' },
  { name: 'chaos' },
];
const NAMES = BENCHES.map((b) => b.name);

function runBench({ name, script, env }: Bench): Promise<{ line?: string; error?: string }> {
  const path = fileURLToPath(new URL(`./${script ?? name}.js`, import.meta.url));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--enable-source-maps', path], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => {
      const line = stdout
        .trim()
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{'));
      if (code === 0 && line) resolve({ line });
      else
        resolve({ error: (stderr.trim().split('\n').pop() ?? '') || `exited with code ${code}` });
    });
  });
}

async function main(): Promise<number> {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  const unknown = only?.filter((name) => !NAMES.includes(name)) ?? [];
  if (unknown.length > 0) {
    console.error(
      `bench all: unknown bench ${unknown.join(', ')}; the benches are ${NAMES.join(', ')}`,
    );
    return 2;
  }
  let failed = 0;
  for (const bench of BENCHES.filter((b) => !only || only.includes(b.name))) {
    console.error(`bench all: running ${bench.name}`);
    const { line, error } = await runBench(bench);
    if (line) console.log(line);
    else {
      failed++;
      console.log(JSON.stringify({ bench: bench.name, error }));
    }
  }
  return failed > 0 ? 1 : 0;
}

main().then((code) => process.exit(code));
