// Benchmark: hostflow against its peer, the original multi-platform controller, on the same
// local burst, back to back on this machine (an absolute figure from another day or machine does
// not compare). Runs the side-by-side harness's driver (`burst.mjs`, in HOSTFLOW_PEER_HARNESS)
// once with the original built in HOSTFLOW_PEER_DIR (its `bin/controller-noqps`, client-go's rate
// limit lifted, the one line a team would change; BENCH_PEER_SHIPPED=1 adds `bin/controller` as
// shipped), then with hostflow from this checkout. Prints each run's JSON line, then one line of
// ratios beside their targets (docs/performance.md, "Against the peer").
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runForReport } from './child-report.js';

/** hostflow's figure over the peer's: what the issue asks of each, in the same run. */
const TARGETS = { throughputAtLeast: 0.6, p50AtMost: 3 };

interface BurstLine {
  system: string;
  throughputPerSec: number;
  createdToSecretMs: { p50: number; p99: number };
  completedToSecretDeletedMs: { p50: number };
  peakRssMb: Record<string, number>;
  extra?: { cpuSec?: { serve: number; cleanup: number } };
}

function required(name: string, what: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`bench peer: set ${name} to ${what}`);
    process.exit(2);
  }
  return value;
}

/** Runs the harness's driver once; its report. */
async function burst(harness: string, env: Record<string, string>): Promise<BurstLine> {
  const driver = join(harness, 'burst.mjs');
  const { line, code } = await runForReport([driver], env, true);
  if (!line) throw new Error(`${driver} (${env.SYSTEM}) exited with code ${code}`);
  return JSON.parse(line) as BurstLine;
}

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
const sum = (values: Record<string, number>) => Object.values(values).reduce((a, b) => a + b, 0);
const cpu = (line: BurstLine) =>
  (line.extra?.cpuSec?.serve ?? NaN) + (line.extra?.cpuSec?.cleanup ?? NaN);

async function main(): Promise<void> {
  const peerDir = required('HOSTFLOW_PEER_DIR', 'the folder the original controller was built in');
  const harness = required(
    'HOSTFLOW_PEER_HARNESS',
    "the side-by-side harness's folder (burst.mjs)",
  );
  const hostflowDir = fileURLToPath(new URL('../..', import.meta.url));
  const binaries = [
    join(peerDir, 'bin', 'controller-noqps'),
    ...(process.env.BENCH_PEER_SHIPPED === '1' ? [join(peerDir, 'bin', 'controller')] : []),
  ];
  for (const binary of binaries) {
    if (!existsSync(binary)) {
      console.error(`bench peer: ${binary} does not exist: build the original there first`);
      process.exit(2);
    }
  }
  const peers: BurstLine[] = [];
  for (const binary of binaries) {
    console.error(`bench peer: the original (${binary})`);
    peers.push(await burst(harness, { HOSTFLOW_DIR: hostflowDir, SYSTEM: 'mpc', MPC_BIN: binary }));
    console.log(JSON.stringify(peers.at(-1)));
  }
  console.error('bench peer: hostflow');
  const hostflow = await burst(harness, { HOSTFLOW_DIR: hostflowDir, SYSTEM: 'hostflow' });
  console.log(JSON.stringify(hostflow));
  const peer = peers[0]!;
  const ratios = {
    throughput: ratio(hostflow.throughputPerSec, peer.throughputPerSec),
    createdToSecretP50: ratio(hostflow.createdToSecretMs.p50, peer.createdToSecretMs.p50),
    createdToSecretP99: ratio(hostflow.createdToSecretMs.p99, peer.createdToSecretMs.p99),
    completedToDeletedP50: ratio(
      hostflow.completedToSecretDeletedMs.p50,
      peer.completedToSecretDeletedMs.p50,
    ),
    peakRssMb: ratio(sum(hostflow.peakRssMb), sum(peer.peakRssMb)),
    cpuSec: ratio(cpu(hostflow), cpu(peer)),
  };
  console.log(
    JSON.stringify({
      bench: 'peer',
      against: 'the original, rate limit lifted',
      ratios,
      targets: TARGETS,
      met: {
        throughput: ratios.throughput >= TARGETS.throughputAtLeast,
        p50: ratios.createdToSecretP50 <= TARGETS.p50AtMost,
      },
    }),
  );
}

main().catch((err: unknown) => {
  console.error(`bench peer: ${(err as Error).message}`);
  process.exit(1);
});
