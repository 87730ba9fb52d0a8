// Delivering the build user on a granted host, blaming only what failed (docs/architecture.md, "Blame only what failed"):
// the host's own failures send the TaskRun elsewhere and count against the host; a failure of
// anything else (the OTP service, Kubernetes, the worker) keeps the host and waits, saying on
// what, until it works or the TaskRun ends; what retrying cannot fix becomes the build's error.
import { condition, setCurrentDetails } from '@temporalio/workflow';
import { blameOf, dependencyOf, forbiddenKindOf, innermostMessage } from '../../shared/failures.js';
import type { Host } from '../../platform-config/host.js';
import { delivery } from './activity-proxies.js';
import { metrics } from '../metrics.js';
import { backoffMs } from '../kit/retry.js';
import { historyFull } from './continue.js';
import { note } from './notes.js';
import type { TaskRun } from './types.js';

/** Waits between deliveries while something other than the host fails: 1 s doubling to this. */
const MAX_WAIT_MS = 30_000;

/**
 * Deliveries tried while the namespace refuses the Secret for a reason that may clear (a full
 * quota, a missing permission): 1+2+4+8+16 s of waits in between, about half a minute.
 */
const FORBIDDEN_TRIES = 6;

export type Delivery =
  | { delivered: { user: string } }
  /** The host failed (connect, auth, the remote script): try another, and count it. */
  | { hostFailed: string; err: unknown }
  /** The host's entry in host-config cannot serve (its admin key, say): try another, blame none. */
  | { hostUnusable: string }
  /** Retrying cannot help: the build gets this as its error. */
  | { final: string }
  /** The namespace refuses the build's Secret (403): nothing can be delivered there. */
  | { forbidden: string }
  | { ended: true };

export async function deliverTo(
  run: TaskRun,
  host: Host,
  options: {
    summary: string;
    /**
     * Started right after the first delivery is scheduled (labels, annotations, Events), and
     * awaited either way.
     */
    alongside?: () => Promise<unknown>;
    /** Continues the workflow as new when its history is full, to deliver again from there. */
    continueAsNew?: () => Promise<never>;
  },
): Promise<Delivery> {
  const { input, ref } = run;
  let alongside: (() => Promise<unknown>) | undefined = options.alongside;
  let notes: Promise<unknown> | undefined;
  for (let wait = 1; ; wait++) {
    const started = Date.now();
    try {
      const delivered = delivery.deliverBuildUser.executeWithOptions({ summary: options.summary }, [
        { host, taskRun: ref, platform: input.platform },
      ]);
      notes = alongside?.();
      alongside = undefined;
      const [{ user }] = await Promise.all([delivered, notes]);
      metrics.provisioning.record((Date.now() - started) / 1000, { platform: input.platform });
      return { delivered: { user } };
    } catch (err) {
      await notes?.catch(() => undefined); // a failed delivery still waits for its notes
      notes = undefined;
      const blame = blameOf(err);
      if (blame === 'host') return { hostFailed: innermostMessage(err), err };
      const cause = innermostMessage(err);
      const forbidden = forbiddenKindOf(err);
      if (forbidden) {
        // A quota or permission may clear: waited for like any dependency, FORBIDDEN_TRIES times.
        // Counted on the TaskRun, so that a run continuing as new does not start over.
        run.pool.forbiddenTries = (run.pool.forbiddenTries ?? 0) + 1;
        if (forbidden === 'denied' || run.pool.forbiddenTries >= FORBIDDEN_TRIES) {
          return { forbidden: cause };
        }
      } else {
        if (blame === 'host-config') return { hostUnusable: cause };
        if (blame === 'final') return { final: cause };
      }
      const waitMs = backoffMs(wait, MAX_WAIT_MS);
      const dependency = dependencyOf(err);
      metrics.waits.add(1, { platform: input.platform, dependency });
      setCurrentDetails(
        `TaskRun ${input.namespace}/${input.name} holds a slot on ${host.name} and waits for ` +
          `${DEPENDENCY_NAMES[dependency]} (try ${wait}, next in ${waitMs / 1000} s): ${cause}`,
      );
      await note(
        run,
        'Warning',
        'DeliveryDelayed',
        `Waiting for ${DEPENDENCY_NAMES[dependency]} to deliver the build user on ${host.name}: ${cause}`,
        `${run.pool.attempt}-${dependency}`,
      );
      if (await condition(run.ended, waitMs)) return { ended: true };
      if (options.continueAsNew && historyFull(run)) await options.continueAsNew();
    }
  }
}

const DEPENDENCY_NAMES = {
  otp: 'the OTP service',
  kubernetes: 'the Kubernetes API',
  cloud: 'the cloud API',
  worker: 'a worker to finish the delivery',
} as const;
