// Every benchmark in turn, each on a stack of its own: prints the one JSON line each bench
// prints (its figures beside its targets), or {"bench", "error"} for one that failed, and exits
// non-zero if any failed. BENCH_ONLY=local-burst,static-burst runs a subset.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BENCHES = ['local-burst', 'static-burst', 'dynamic-burst', 'chaos'] as const;

function runBench(name: string): Promise<{ line?: string; error?: string }> {
  const script = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--enable-source-maps', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
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
  const unknown = only?.filter((name) => !(BENCHES as readonly string[]).includes(name)) ?? [];
  if (unknown.length > 0) {
    console.error(
      `bench all: unknown bench ${unknown.join(', ')}; the benches are ${BENCHES.join(', ')}`,
    );
    return 2;
  }
  let failed = 0;
  for (const name of BENCHES.filter((b) => !only || only.includes(b))) {
    console.error(`bench all: running ${name}`);
    const { line, error } = await runBench(name);
    if (line) console.log(line);
    else {
      failed++;
      console.log(JSON.stringify({ bench: name, error }));
    }
  }
  return failed > 0 ? 1 : 0;
}

main().then((code) => process.exit(code));
