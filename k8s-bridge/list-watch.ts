// A supervised list+watch loop. client-node's informer stops on errors and keeps full
// objects; this one pages through lists, backs off on failure, relists on 410 Gone, restarts
// a silent watch, and relists periodically so missed events are caught (level-triggered).
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { LineLog } from '../runtime/logger.js';
import { statusCode } from '../shared/kube-errors.js';

export interface ListPage<T> {
  items: T[];
  resourceVersion: string;
  continueToken?: string;
}

export interface ListWatchHandlers<T> {
  /** One page of a full relist. */
  onListPage(items: T[]): Promise<void> | void;
  /** A full relist finished; everything not reported since the matching start is gone. */
  onListDone(): Promise<void> | void;
  onListStart(): Promise<void> | void;
  onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): Promise<void> | void;
}

export interface ListWatchOptions<T> extends ListWatchHandlers<T> {
  name: string;
  kubeConfig: KubeConfig;
  watchPath: string;
  /** Extra watch query parameters, such as a fieldSelector matching the list's. */
  watchParams?: Record<string, string>;
  list(continueToken: string | undefined): Promise<ListPage<T>>;
  resyncMs: number;
  log?: LineLog;
  /**
   * Where the resource's CRD comes from, said when the API server serves no such resource (a
   * 404 on the list): an install without it would otherwise wait on it in silence.
   */
  crdFrom?: string;
}

/**
 * The client aborts every watch request after 30 s (a fixed AbortSignal.timeout in
 * @kubernetes/client-node's Watch). The server ends each watch before that, so each reconnect
 * resumes from the last resourceVersion instead of failing into a full relist.
 */
const WATCH_TIMEOUT_S = 25;
const WATCHDOG_SLACK_MS = 30_000;
const MAX_BACKOFF_MS = 30_000;

/** Every running ListWatch in this process, for the bridge's readiness probe. */
const running = new Set<ListWatch<unknown>>();

/**
 * The running list+watch loops that have not completed a first full list yet, each by its name
 * and, once a list has failed, why.
 */
export function unsyncedListWatches(): string[] {
  return [...running]
    .filter((w) => !w.synced)
    .map((w) => (w.failure ? `${w.name} (${w.failure})` : w.name));
}

export class ListWatch<T> {
  private stopped = false;
  private listedOnce = false;
  private current?: AbortController;
  private wake?: () => void;
  private lastListAt = 0;
  private readonly log: LineLog;
  /** Why the last list or watch failed, until one succeeds. */
  failure: string | undefined;

  constructor(private readonly options: ListWatchOptions<T>) {
    this.log = options.log ?? ((m) => console.log(m));
  }

  /** Runs until stop(). Never throws: errors are logged and retried with back-off. */
  async run(): Promise<void> {
    running.add(this as ListWatch<unknown>);
    try {
      await this.loop();
    } finally {
      running.delete(this as ListWatch<unknown>);
    }
  }

  get name(): string {
    return this.options.name;
  }

  /** A full list has completed at least once: the handlers have seen every object. */
  get synced(): boolean {
    return this.listedOnce;
  }

  private async loop(): Promise<void> {
    let failures = 0;
    let resourceVersion: string | undefined;
    while (!this.stopped) {
      try {
        if (!resourceVersion || Date.now() - this.lastListAt >= this.options.resyncMs) {
          resourceVersion = await this.relist();
        }
        const outcome = await this.watchOnce(resourceVersion);
        failures = 0;
        this.failure = undefined;
        if (outcome.kind === 'gone') resourceVersion = undefined;
        else resourceVersion = outcome.resourceVersion;
      } catch (err) {
        if (this.stopped) break;
        failures++;
        const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(failures, 8));
        this.failure = this.failureOf(err);
        this.log(`${this.options.name}: ${this.failure}; retrying in ${delay} ms`, 'warn');
        resourceVersion = undefined;
        await this.sleep(delay);
      }
    }
  }

  /** A failure as a sentence; a resource the API server does not serve names its CRD's source. */
  private failureOf(err: unknown): string {
    const { crdFrom, watchPath } = this.options;
    if (statusCode(err) === 404 && crdFrom) {
      const resource = watchPath.replace(/^\/apis\//, '').replace(/\/namespaces\/[^/]+/, '');
      return `the API server serves no ${resource}: its CRD is missing (${crdFrom})`;
    }
    return (err as Error).message;
  }

  stop(): void {
    this.stopped = true;
    this.current?.abort();
    this.wake?.();
  }

  /** Forces a full relist now (used by tests and on demand). */
  resyncNow(): void {
    this.lastListAt = 0;
    this.current?.abort();
  }

  private async relist(): Promise<string> {
    await this.options.onListStart();
    let continueToken: string | undefined;
    let resourceVersion: string;
    do {
      const page = await this.options.list(continueToken);
      await this.options.onListPage(page.items);
      continueToken = page.continueToken || undefined;
      resourceVersion = page.resourceVersion;
    } while (continueToken && !this.stopped);
    await this.options.onListDone();
    this.lastListAt = Date.now();
    this.listedOnce = true;
    return resourceVersion;
  }

  private async watchOnce(
    resourceVersion: string,
  ): Promise<{ kind: 'ended'; resourceVersion: string } | { kind: 'gone' }> {
    let latest = resourceVersion;
    let gone = false;
    let lastSeen = Date.now();
    let chain = Promise.resolve();
    const remainingResync = Math.max(
      5,
      Math.ceil((this.options.resyncMs - (Date.now() - this.lastListAt)) / 1000),
    );
    const timeoutSeconds = Math.min(WATCH_TIMEOUT_S, remainingResync);
    let watchdog: NodeJS.Timeout | undefined;
    const ended = new Promise<void>((resolve, reject) => {
      const watch = new Watch(this.options.kubeConfig);
      watch
        .watch(
          this.options.watchPath,
          {
            ...this.options.watchParams,
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds,
          },
          (
            type: string,
            object: T & { metadata?: { resourceVersion?: string }; code?: number },
          ) => {
            lastSeen = Date.now();
            if (type === 'ERROR') {
              if (object.code === 410) gone = true;
              else reject(new Error(`watch error: ${JSON.stringify(object).slice(0, 300)}`));
              this.current?.abort();
              return;
            }
            if (object.metadata?.resourceVersion) latest = object.metadata.resourceVersion;
            if (type === 'BOOKMARK') return;
            // Events are handled in order, one at a time.
            chain = chain.then(() =>
              Promise.resolve(this.options.onEvent(type as 'ADDED', object)).catch((err) =>
                this.log(
                  `${this.options.name}: event handler failed: ${(err as Error).message}`,
                  'warn',
                ),
              ),
            );
          },
          (err: unknown) =>
            err && !gone && !this.stopped && !isAbort(err) ? reject(err) : resolve(),
        )
        .then((controller) => {
          this.current = controller;
          if (this.stopped) controller.abort();
        }, reject);
      watchdog = setInterval(() => {
        if (Date.now() - lastSeen > timeoutSeconds * 1000 + WATCHDOG_SLACK_MS) {
          this.log(`${this.options.name}: watch silent for too long; restarting it`, 'warn');
          this.current?.abort();
        }
      }, 5_000);
    });
    try {
      await ended;
    } finally {
      clearInterval(watchdog);
      this.current = undefined;
    }
    await chain;
    return gone ? { kind: 'gone' } : { kind: 'ended', resourceVersion: latest };
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** Our own abort, or the client's 30 s timeout: the watch ended, nothing failed. */
function isAbort(err: unknown): boolean {
  const name = (err as { name?: string; type?: string })?.name;
  return (
    name === 'AbortError' ||
    name === 'TimeoutError' ||
    (err as { type?: string })?.type === 'aborted'
  );
}
