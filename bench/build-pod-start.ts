// Benchmark: how soon a TaskRun's real build pod starts on the local kubelet, with and without
// hostflow telling the pod its Secret is written (activities/kubernetes/build-pods.ts). Each
// round creates a static-pool TaskRun and at once its pod, as Tekton does: the pod waits for the
// Secret's mount. "told" pods are owned by their TaskRun, as Tekton's are, so hostflow annotates
// them once the Secret is written; "not told" pods carry the same label but no ownerReference, so
// hostflow leaves them alone and the kubelet mounts the Secret at its next try of its back-off.
// Rounds alternate and run one at a time.
//
// The kubelet's back-off grows while the pod waits, so what matters is how long the Secret takes:
// the pool has one slot, held by another TaskRun for BENCH_HOLD_SECONDS (default 20; 0: none) while
// the pod waits, as a build waits in line or for a VM to boot. Prints one JSON line per kind:
// created → Secret and Secret → pod Running (ms).
//
// Needs the machine's one kubelet: not while `npm test` or `npm start` runs.
import { CoreV1Api } from '@kubernetes/client-node';
import { buildPod } from '../local-stack/build-pod.js';
import { waitFor } from '../local-stack/process.js';
import { secretNameFor } from '../platform-config/contract.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { startBenchStack } from './stack.js';
import { summarize } from './stats.js';
import { benchTaskRun, completeTaskRun } from './taskruns.js';

const PLATFORM = 'linux/bench';

async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_PODS ?? 10);
  if (!Number.isInteger(rounds) || rounds < 2)
    throw new Error(`BENCH_PODS: "${process.env.BENCH_PODS}" is not an integer of 2 or more`);
  const holdMs = Number(process.env.BENCH_HOLD_SECONDS ?? 20) * 1000;
  if (!Number.isFinite(holdMs) || holdMs < 0)
    throw new Error(
      `BENCH_HOLD_SECONDS: "${process.env.BENCH_HOLD_SECONDS}" is not a number of seconds`,
    );
  const stack = await startBenchStack(
    {},
    { sshHosts: 1, platform: PLATFORM, concurrency: 1 },
    undefined,
    { localNode: true },
  );
  try {
    const { custom, namespace } = stack;
    const core = stack.kc.makeApiClient(CoreV1Api);
    const image = stack.buildStepImage!;
    const figures = {
      told: { secret: [] as number[], running: [] as number[] },
      notTold: { secret: [] as number[], running: [] as number[] },
    };
    for (let i = 0; i < rounds; i++) {
      const told = i % 2 === 0;
      const name = `pod-${i}`;
      const holder = `hold-${i}`;
      if (holdMs > 0) {
        await custom.createNamespacedCustomObject({
          ...TASKRUN_API,
          namespace,
          body: benchTaskRun(holder, namespace, PLATFORM),
        });
        await waitFor(`${holder} to hold the slot`, () =>
          core
            .readNamespacedSecret({ name: secretNameFor(holder), namespace })
            .then(() => true)
            .catch(() => undefined),
        );
        setTimeout(() => void completeTaskRun(custom, namespace, holder), holdMs);
      }
      const t0 = performance.now();
      const created = (await custom.createNamespacedCustomObject({
        ...TASKRUN_API,
        namespace,
        body: benchTaskRun(name, namespace, PLATFORM),
      })) as { metadata: { uid: string } };
      const ref = { namespace, name, uid: created.metadata.uid };
      await core.createNamespacedPod({
        namespace,
        body: buildPod(ref, { image, owned: told, script: 'sleep 2' }),
      });
      let secretMs = NaN;
      const runningMs = await waitFor(
        `pod ${name} to run`,
        async () => {
          if (Number.isNaN(secretMs)) {
            const secret = await core
              .readNamespacedSecret({ name: secretNameFor(name), namespace })
              .catch(() => undefined);
            if (secret) secretMs = performance.now() - t0;
          }
          const pod = await core.readNamespacedPod({ name: `${name}-pod`, namespace });
          return ['Running', 'Succeeded'].includes(pod.status?.phase ?? '')
            ? performance.now() - t0
            : undefined;
        },
        { timeoutMs: 5 * 60_000, intervalMs: 50 },
      );
      const kind = figures[told ? 'told' : 'notTold'];
      kind.secret.push(secretMs);
      kind.running.push(runningMs - secretMs);
      console.error(
        `bench: ${name} (${told ? 'told' : 'not told'}): Secret after ${Math.round(secretMs)} ms, ` +
          `running ${Math.round(runningMs - secretMs)} ms after it`,
      );
      await completeTaskRun(custom, namespace, name);
      await core.deleteNamespacedPod({ name: `${name}-pod`, namespace, gracePeriodSeconds: 0 });
    }
    console.log(
      JSON.stringify({
        bench: 'build-pod-start',
        rounds,
        holdSeconds: holdMs / 1000,
        told: {
          createdToSecretMs: summarize(figures.told.secret),
          secretToRunningMs: summarize(figures.told.running),
        },
        notTold: {
          createdToSecretMs: summarize(figures.notTold.secret),
          secretToRunningMs: summarize(figures.notTold.running),
        },
      }),
    );
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
