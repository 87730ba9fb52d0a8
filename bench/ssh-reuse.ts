// Benchmark: short SSH commands in bursts over real sshd hosts (issue 27): `BENCH_CALLS`
// concurrent `true` spread over `BENCH_HOSTS` hosts, `BENCH_ROUNDS` times. The first round finds
// no connection open; later ones reuse the pool's. Prints one JSON line: per-call p50/p99 of each
// kind of round, and the admin logins (handshakes) each host's sshd counted.
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { closeSshConnections, withSsh } from '../activities/ssh/session.js';
import { startSshHosts } from '../local-stack/ssh-hosts.js';
import { adminLogins } from './ssh-logins.js';
import { summarize } from './stats.js';

async function main(): Promise<void> {
  const HOSTS = Number(process.env.BENCH_HOSTS ?? 4);
  const CALLS = Number(process.env.BENCH_CALLS ?? 32);
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
  const pool = await startSshHosts({
    count: HOSTS,
    stateDir: join(tmpdir(), `hostflow-ssh-reuse-${process.pid}`),
  });
  try {
    const before = await Promise.all(pool.hosts.map(adminLogins));
    const round = () =>
      Promise.all(
        Array.from({ length: CALLS }, async (_, i) => {
          const h = pool.hosts[i % HOSTS]!;
          const target = {
            address: h.address,
            user: h.adminUser,
            privateKey: h.adminPrivateKey,
            hostKey: h.hostPublicKey,
          };
          const t0 = performance.now();
          await withSsh(target, (s) => s.exec('true'));
          return performance.now() - t0;
        }),
      );
    const cold = await round();
    const warm: number[] = [];
    for (let r = 1; r < ROUNDS; r++) warm.push(...(await round()));
    const after = await Promise.all(pool.hosts.map(adminLogins));
    const logins = after.map((n, i) => n - before[i]!);
    console.log(
      JSON.stringify({
        bench: 'ssh-reuse',
        hosts: HOSTS,
        concurrentCalls: CALLS,
        rounds: ROUNDS,
        firstRoundMs: summarize(cold),
        laterRoundsMs: summarize(warm),
        adminLoginsPerHost: { max: Math.max(...logins), total: logins.reduce((a, b) => a + b) },
      }),
    );
  } finally {
    closeSshConnections();
    await pool.stop();
  }
}

main().catch((err) => {
  console.error(`bench ssh-reuse: ${(err as Error).message}`);
  process.exit(1);
});
