// Benchmark: the chaos run at full size (docs/architecture.md, "Targets", "Reliability"). 200 TaskRuns spread
// over local, static, dynamic and pool platforms, builds completing at random, and kill -9 of the
// worker, the bridge and the OTP service in turn meanwhile; then the counts of what must never
// happen, as one JSON line. Everything runs locally, started here and stopped at the end.
import { KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureNamespace } from '../local-stack/cluster-setup.js';
import { LOCAL_ADMIN_USER, startKubeApiServer } from '../local-stack/kube-apiserver.js';
import { startMoto } from '../local-stack/moto.js';
import { startTemporalDevServer } from '../local-stack/temporal.js';
import { runChaos } from './chaos-run.js';
import { startChaosStack } from './chaos-stack.js';

const TASKRUNS = Number(process.env.BENCH_TASKRUNS ?? 200);
const KILLS = Number(process.env.BENCH_KILLS ?? 30);
const SEED = Number(process.env.BENCH_SEED ?? 1);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'hostflow-chaos-'));
  const logDir = join(dir, 'logs');
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = () => void stopAll().finally(() => process.exit(130));
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    const [kube, temporal, moto] = await Promise.all([
      startKubeApiServer({
        stateDir: join(dir, 'kube'),
        ephemeral: true,
        logDir,
        resourcesFor: LOCAL_ADMIN_USER,
      }),
      startTemporalDevServer({ persist: false, fixedPorts: false, logDir }),
      startMoto({ logDir }),
    ]);
    stops.push(kube.stop, temporal.stop, moto.stop);
    const kc = new KubeConfig();
    kc.loadFromFile(kube.kubeconfigPath);
    await ensureNamespace(kc, 'chaos');
    await ensureNamespace(kc, 'chaos-engine', { engineNamespace: true });
    const stack = await startChaosStack({
      kubeconfigPath: kube.kubeconfigPath,
      temporalAddress: temporal.address,
      temporalNamespace: temporal.namespace,
      motoEndpoint: moto.endpoint,
      namespace: 'chaos',
      engineNamespace: 'chaos-engine',
      taskQueue: 'hostflow-chaos',
      stateDir: dir,
      logDir,
      subnetCidr: '10.231.128.0/20',
      staticHosts: 4,
      concurrency: 4,
      maxInstances: 6,
    });
    stops.push(stack.stop);
    const report = await runChaos(stack.target, {
      taskRuns: TASKRUNS,
      kills: KILLS,
      seed: SEED,
      buildMs: [1_000, 10_000],
      spreadMs: 60_000,
      timeoutMs: 30 * 60_000,
      log: (line) => console.error(line),
    });
    console.log(JSON.stringify({ bench: 'chaos', ...report }));
  } finally {
    await stopAll();
  }
}

main().catch((err) => {
  console.error(`bench:chaos: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
