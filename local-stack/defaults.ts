// Fixed ports of the persistent local stack (`npm start`). Temporal's live in temporal-dev.yaml.
// Away from 6443/2379 so a kind or k3s cluster on the same machine does not collide.
import { BRIDGE_BUNDLE } from '../workers/bundle-bridge.js';

export const LOCAL_PORTS = {
  kubeApi: 16443,
  etcd: 12379,
  otp: 18443,
  /** hostflow's lock-audit receiver: the local API server's audit webhook. */
  lockAudit: 18444,
  /** moto's EC2, the demo cloud. */
  moto: 15000,
} as const;

/**
 * Node flags of the worker and the bridge, here and in the manifests (deploy/base/engine, which
 * deploy-manifests.test.ts compares). The bridge holds little live data (an index entry per
 * TaskRun of hostflow's, about 50 MB of heap with 10,000 TaskRuns in the cluster):
 * - a 1 MiB young generation instead of V8's 16 MiB took its peak RSS in a 500-TaskRun burst
 *   from 239 to 161 MB;
 * - a 128 MB old generation makes V8 collect the garbage of a full relist (10,000 TaskRuns, 74 MB
 *   of JSON) as it goes: peak RSS 298 → 159 MB. Raise it for an index of over 100,000 TaskRuns;
 * - it runs its JavaScript in V8's interpreter only (no optimizing or baseline compilers): its
 *   own CPU is small (0.9 s in the burst either way), and the compiled code of its libraries was
 *   the biggest part left: peak RSS 166 → 132 MB in the burst, 162 → 140 MB with 10,000 TaskRuns,
 *   for a full list from cold in 7.7 s instead of 7.3 s. Not --jitless: that also turns off
 *   WebAssembly, which undici's HTTP/1 parser (client-node's transport) needs;
 * - it drops the bytecode of a function unused since the last collection rather than the sixth:
 *   most of its libraries' code runs once, at start. Peak RSS in the burst 104 → 100–101 MB, at
 *   the same CPU (0.8–0.9 s).
 * The worker's young generation is 8 MiB a semi-space: its peak RSS in the local burst went from
 * 629 to 438 MB at the same p50 (6.3 s), and the static burst's free-slot p50 stayed at 5.7 s. A
 * 1 MiB one made that burst's slot requests 2.7 times as slow (p50 5.3 s → 14.4 s). Its old
 * generation is bounded, so its memory is flat across a long run: without a bound V8 let it
 * climb to 870–920 MB before collecting; with 512 MB it held 414–451 MB after each of six bursts
 * of 500, under the 1 GiB limit of its Deployment.
 */
export const ENGINE_NODE_FLAGS: Record<EngineKind, string[]> = {
  worker: ['--max-semi-space-size=8', '--max-old-space-size=512'],
  bridge: [
    // interpreter only
    '--no-opt',
    '--no-maglev',
    '--no-sparkplug',
    '--max-semi-space-size=1',
    '--max-old-space-size=128',
    '--bytecode-old-age=1',
  ],
};

/**
 * Environment of the worker and the bridge beyond their settings, here and in the manifests. The
 * worker's threads (Temporal's Rust core, the workflow thread, V8's) each got a glibc malloc arena
 * of their own, which keep freed memory: with two arenas its peak RSS in the local burst was
 * 400–418 MB in three runs, against 422–454 MB in two, at the same latency (p50 6.0–6.3 s against
 * 5.6–6.2 s). The bridge's stayed at 104 MB either way.
 */
export const ENGINE_ENV: Record<EngineKind, Record<string, string>> = {
  worker: { MALLOC_ARENA_MAX: '2' },
  bridge: {},
};

/** The bridge as one bundled file (workers/bundle-bridge.ts), which is what it runs. */
export { BRIDGE_BUNDLE };

/** What `node` runs for the worker and the bridge, here, in the image and in the manifests. */
export const ENGINE_SCRIPTS: Record<EngineKind, string> = {
  worker: 'dist/workers/worker.js',
  bridge: BRIDGE_BUNDLE,
};

export type EngineKind = 'worker' | 'bridge';
