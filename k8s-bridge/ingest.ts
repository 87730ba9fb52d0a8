// The one way the bridge tells a workflow what it saw: each ingest watches its kinds and, for
// every object seen, composes a message (its workflow, signal, payload, and how to start it);
// this sends it unless the workflow was sent the same last, signalling with start (or only
// signalling, for an object that is gone), and tries a failed send again with back-off until it
// goes through or a newer message for that workflow replaces it. docs/architecture.md, "The bridge".
import type { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type SignalDefinition,
} from '@temporalio/client';
import pLimit from 'p-limit';
import { innermostMessage } from '../shared/failures.js';
import type { WorkflowStart } from '../shared/workflow-start.js';
import type { LineLog } from '../runtime/logger.js';

/** What every ingest is given. */
export interface IngestOptions {
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  temporal: Client;
  taskQueue: string;
  resyncMs: number;
  /** Watch one namespace only (a namespace-scoped install); all namespaces when undefined. */
  watchNamespace?: string;
  log?: LineLog;
  /** Concurrent Temporal calls; bounds the burst after a restart. */
  concurrency?: number;
}

/** The workflow a message goes to, and how log lines name its object. */
export interface IngestTarget {
  workflowId: string;
  /**
   * What sends are compared and retried by (the workflow id when unset): objects that each tell
   * the same workflow, as ClusterOperations tell their Provisioning's, keep their own.
   */
  key?: string;
  /** E.g. `Machine ns/name`. */
  subject: string;
  /** Extra log fields, to search the bridge's and the worker's lines at once. */
  logFields?: Record<string, string>;
}

export interface WorkflowMessage<A = unknown> {
  signal: SignalDefinition<[A]>;
  arg: A;
  /** Start the workflow if it does not run; without it, only a running workflow is told. */
  start?: WorkflowStart;
}

/**
 * `unchanged`: not sent, the workflow was sent the same last; `not-running`: a signal found no
 * running workflow; `finished`: its workflow is closed and may not start again.
 */
export type Outcome = 'sent' | 'unchanged' | 'not-running' | 'finished' | 'failed';

export interface SendOptions {
  /** Send even what the workflow was sent last (a relist). */
  anyway?: boolean;
  /** Compare with what the workflow was sent last (default); false when the ingest does. */
  dedupe?: boolean;
  /** Forget what was sent once sending (the object is gone: its next life starts afresh). */
  forget?: boolean;
  /** Each attempt's outcome, the retries' included. */
  settled?(outcome: Outcome): void;
}

/** How long one signal (or signal-with-start) may take before it fails and is sent again. */
const SEND_DEADLINE_MS = 30_000;

/** The first retry's delay, doubled after each failure in a row, up to the longest. */
const RETRY_FIRST_MS = 1_000;
const RETRY_LONGEST_MS = 30_000;

interface Watch {
  run(): Promise<void>;
  stop(): void;
}

export class Ingest {
  readonly log: LineLog;
  private readonly watches: Array<{ watch: Watch; after?: Promise<void> }> = [];
  /** What each workflow was sent last (its message's payload as JSON). */
  private readonly sent = new Map<string, string>();
  /** Sends that failed in a row, by workflow, and the retry waiting. */
  private readonly failures = new Map<string, { count: number; timer?: NodeJS.Timeout }>();
  private readonly limit: ReturnType<typeof pLimit>;
  private stopped = false;
  private onStop!: () => void;
  private readonly stopping = new Promise<void>((resolve) => (this.onStop = resolve));
  private running?: Promise<unknown>;

  constructor(private readonly options: IngestOptions) {
    this.log = options.log ?? ((m) => console.log(m));
    this.limit = pLimit(options.concurrency ?? 32);
  }

  /** What a resourceWatch of this ingest is given. */
  get watchOptions(): IngestOptions & { log: LineLog } {
    return { ...this.options, log: this.log };
  }

  /** Runs `watch` from start(), once `after` resolves when given. */
  watch(watch: Watch, after?: Promise<void>): void {
    this.watches.push({ watch, ...(after ? { after } : {}) });
  }

  start(): void {
    this.running ??= Promise.all(
      this.watches.map(({ watch, after }) =>
        after
          ? Promise.race([after, this.stopping]).then(() =>
              this.stopped ? undefined : watch.run(),
            )
          : watch.run(),
      ),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.onStop();
    for (const failed of this.failures.values()) clearTimeout(failed.timer);
    this.watches.forEach(({ watch }) => watch.stop());
    await this.running;
    await this.limit(() => undefined); // let queued calls drain
  }

  /** Records that `key` (a workflow id, or a target's key) is sent `arg`; false when that is what it was sent last, unless `anyway`. */
  changed(key: string, arg: unknown, anyway: boolean): boolean {
    const text = JSON.stringify(arg);
    if (!anyway && this.sent.get(key) === text) return false;
    this.sent.set(key, text);
    return true;
  }

  /**
   * Sends what `compose` makes. A failure, composing included,
   * is logged and tried again after a back-off, composing again, unless a newer send to the
   * same workflow comes first.
   */
  async send<A>(
    target: IngestTarget,
    compose: () => WorkflowMessage<A> | Promise<WorkflowMessage<A>>,
    options: SendOptions = {},
  ): Promise<Outcome> {
    const key = target.key ?? target.workflowId;
    const pending = this.failures.get(key);
    clearTimeout(pending?.timer);
    if (pending) pending.timer = undefined;
    let outcome: Outcome;
    try {
      const message = await compose();
      if (options.dedupe !== false && !this.changed(key, message.arg, !!options.anyway))
        return 'unchanged';
      if (options.forget) this.sent.delete(key);
      outcome = await this.limit(() => this.deliver(target, message));
      this.failures.delete(key);
    } catch (err) {
      this.retryLater(target, compose, options, err);
      outcome = 'failed';
    }
    options.settled?.(outcome);
    return outcome;
  }

  private async deliver<A>(target: IngestTarget, message: WorkflowMessage<A>): Promise<Outcome> {
    const { workflowId, subject, logFields } = target;
    const workflows = this.options.temporal.workflow;
    // A call Temporal does not answer in time fails, and is sent again composed anew: one that
    // hung would hold up every later event of the watch that sent it.
    const deadline = Date.now() + SEND_DEADLINE_MS;
    try {
      await this.options.temporal.withDeadline(deadline, async () => {
        if (message.start) {
          const { workflowType, ...start } = message.start;
          await workflows.signalWithStart(workflowType, {
            ...start,
            taskQueue: this.options.taskQueue,
            signal: message.signal,
            signalArgs: [message.arg],
          });
        } else {
          await workflows.getHandle(workflowId).signal(message.signal, message.arg);
        }
      });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'not-running';
      if (err instanceof WorkflowExecutionAlreadyStartedError) return 'finished';
      throw err;
    }
    this.log(`${subject}: signalled ${workflowId}`, 'debug', logFields);
    return 'sent';
  }

  private retryLater<A>(
    target: IngestTarget,
    compose: () => WorkflowMessage<A> | Promise<WorkflowMessage<A>>,
    options: SendOptions,
    err: unknown,
  ): void {
    const { workflowId, subject, logFields } = target;
    const key = target.key ?? workflowId;
    this.sent.delete(key); // whatever comes next is sent
    const failed = this.failures.get(key) ?? { count: 0 };
    failed.count++;
    this.failures.set(key, failed);
    // Told again soon, not only at the next change or relist (minutes away).
    const delayMs = Math.min(RETRY_LONGEST_MS, RETRY_FIRST_MS * 2 ** (failed.count - 1));
    this.log(
      `${subject}: could not signal ${workflowId}: ${innermostMessage(err)}; again in ${delayMs / 1000}s`,
      'warn',
      logFields,
    );
    if (this.stopped) return;
    failed.timer = setTimeout(() => {
      failed.timer = undefined;
      if (!this.stopped) void this.send(target, compose, { ...options, anyway: true });
    }, delayMs);
  }
}
