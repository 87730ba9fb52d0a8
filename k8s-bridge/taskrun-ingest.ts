// The TaskRun ingest: turns TaskRun changes into signals on their workflows. It writes nothing
// to Kubernetes and keeps only a small index (uid → last state sent), so replicas are safe and
// its memory stays flat as the cluster grows.
import type { Registry } from 'prom-client';
import { createBridgeMetrics, type BridgeMetrics } from './metrics.js';
import { TASKRUN_API } from '../shared/taskrun-api.js';
import { WORKFLOW_ID, parseTaskRunWorkflowId } from '../shared/workflow-ids.js';
import {
  taskRunObserved,
  taskRunStart,
  type TaskRunObservation,
  type TaskRunState,
} from '../shared/contracts/taskrun.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { crdSource } from '../shared/families.js';
import { ListWatch } from './list-watch.js';
import {
  matchContract,
  observedState,
  type ContractTaskRun,
  type TaskRunObject,
} from '../platform-config/taskrun-contract.js';
import { Ingest, type IngestOptions, type Outcome, type WorkflowMessage } from './ingest.js';

export interface TaskRunIngestOptions extends IngestOptions {
  metrics?: Registry;
  /** A TaskRun workflow's history limit before it continues as new (its own default if unset). */
  taskRunMaxHistory?: number;
}

interface Indexed {
  namespace: string;
  name: string;
  sent: TaskRunState;
  /** Its workflow has completed: nothing restarts it. */
  finished?: boolean;
}

/**
 * TaskRuns per list page. A page is parsed whole: 500 finished Tekton TaskRuns are about 3.7 MB
 * of JSON, and a relist of 10,000 grew the bridge by 130–160 MB that it kept afterwards.
 */
const LIST_PAGE_SIZE = 100;

/** A send's outcome as the signals metric labels it; any other is an error. */
const SIGNAL_RESULTS: Partial<Record<Outcome, string>> = {
  sent: 'ok',
  finished: 'already_finished',
  'not-running': 'not_running',
};

export class TaskRunIngest {
  private readonly index = new Map<string, Indexed>();
  private seenInList = new Set<string>();
  private runningBeforeList?: Array<{ uid: string; namespace: string; name: string }>;
  private readonly ingest: Ingest;
  private readonly listWatch: ListWatch<TaskRunObject>;
  private readonly metrics?: BridgeMetrics;

  constructor(private readonly options: TaskRunIngestOptions) {
    this.ingest = new Ingest(options);
    if (options.metrics) this.metrics = createBridgeMetrics(options.metrics, () => this.index.size);
    this.listWatch = new ListWatch<TaskRunObject>({
      name: 'taskrun watch',
      kubeConfig: options.kubeConfig,
      watchPath: `/apis/${TASKRUN_API.group}/${TASKRUN_API.version}/${
        options.watchNamespace ? `namespaces/${options.watchNamespace}/` : ''
      }${TASKRUN_API.plural}`,
      resyncMs: options.resyncMs,
      log: this.ingest.log,
      crdFrom: crdSource(TASKRUN_API),
      list: async (continueToken) => {
        const page = { ...TASKRUN_API, limit: LIST_PAGE_SIZE, _continue: continueToken };
        const list = (await (options.watchNamespace
          ? options.custom.listNamespacedCustomObject({
              ...page,
              namespace: options.watchNamespace,
            })
          : options.custom.listClusterCustomObject(page))) as {
          items: TaskRunObject[];
          metadata: { resourceVersion: string; continue?: string };
        };
        return {
          items: list.items,
          resourceVersion: list.metadata.resourceVersion,
          continueToken: list.metadata.continue,
        };
      },
      onListStart: () => this.onListStart(),
      onListPage: (items) => this.onListPage(items),
      onListDone: () => this.onListDone(),
      onEvent: (type, object) => this.onEvent(type, object),
    });
    this.ingest.watch(this.listWatch);
  }

  start(): void {
    this.ingest.start();
  }

  stop(): Promise<void> {
    return this.ingest.stop();
  }

  resyncNow(): void {
    this.listWatch.resyncNow();
  }

  get indexSize(): number {
    return this.index.size;
  }

  /**
   * Snapshots running TaskRun workflows *before* listing TaskRuns: a workflow in the snapshot
   * whose TaskRun is then absent from the list was deleted, not merely created after the list.
   */
  private async onListStart(): Promise<void> {
    this.metrics?.relists.inc();
    this.seenInList = new Set();
    this.runningBeforeList = [];
    // Only this bridge's scope: its task queue, and its namespace when it watches one.
    const scope = [
      `${SA.kind.name} = '${KIND.taskRun}'`,
      `ExecutionStatus = 'Running'`,
      `TaskQueue = '${this.options.taskQueue}'`,
      ...(this.options.watchNamespace
        ? [`${SA.namespace.name} = '${this.options.watchNamespace}'`]
        : []),
    ];
    const query = scope.join(' AND ');
    try {
      for await (const execution of this.options.temporal.workflow.list({ query })) {
        const parsed = parseTaskRunWorkflowId(execution.workflowId);
        if (parsed) this.runningBeforeList.push(parsed);
      }
    } catch (err) {
      this.runningBeforeList = undefined; // sweep skipped this round
      this.ingest.log(
        `listing running TaskRun workflows failed: ${(err as Error).message}`,
        'warn',
      );
    }
  }

  private async onListPage(items: TaskRunObject[]): Promise<void> {
    const running = this.runningBeforeList && new Set(this.runningBeforeList.map((w) => w.uid));
    const calls: Promise<void>[] = [];
    for (const item of items) {
      const match = matchContract(item);
      if (!match) continue;
      this.seenInList.add(match.uid);
      const state = observedState(match);
      // A TaskRun still running whose workflow is not (an operator terminated it): start it
      // again; the new run takes over what the old one served (workflows/taskrun/adopt.ts).
      const known = this.index.get(match.uid);
      const stopped =
        state === 'active' &&
        known?.sent === 'active' &&
        !known.finished &&
        !running?.has(match.uid);
      if (stopped && running) this.metrics?.restarts.inc();
      calls.push(this.observe(match, state, stopped && running !== undefined));
    }
    await Promise.all(calls);
  }

  /** Whatever the index holds that the full list did not show was deleted while we looked away. */
  private async onListDone(): Promise<void> {
    const seen = this.seenInList;
    const missing = [...this.index.entries()].filter(([uid]) => !seen.has(uid));
    await Promise.all(missing.map(([uid, entry]) => this.observeDeleted(uid, entry)));
    await this.sweepOrphans(seen);
    this.ingest.log(
      `relist complete: ${seen.size} TaskRun(s) under contract, ${missing.length} gone since last seen`,
    );
  }

  private async onEvent(
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: TaskRunObject,
  ): Promise<void> {
    const match = matchContract(object);
    if (!match) return;
    if (type === 'DELETED') {
      await this.observeDeleted(match.uid, match);
      return;
    }
    // Don't wait: other TaskRuns' events must not queue behind this one's Temporal call.
    void this.observe(match, observedState(match));
  }

  /** A failed send leaves the index alone, so a retry or the next resync sends it again. */
  private async observe(
    taskRun: ContractTaskRun,
    state: TaskRunState,
    again = false,
  ): Promise<void> {
    const known = this.index.get(taskRun.uid);
    if (known?.sent === state && !again) return;
    const { namespace, name, uid } = taskRun;
    const settled = (outcome: Outcome) => {
      const result = SIGNAL_RESULTS[outcome] ?? 'error';
      this.metrics?.signals.inc({ state, result });
      // A closed workflow is never restarted, so there is nothing more to tell it; nor is a
      // deletion, to a workflow that is not running.
      const told = outcome === 'not-running' && state === 'deleted';
      if (outcome === 'sent' || outcome === 'finished' || told)
        this.index.set(uid, {
          namespace,
          name,
          sent: state,
          ...(outcome === 'finished' ? { finished: true } : {}),
        });
    };
    await this.ingest.send(target(taskRun, state), () => this.message(taskRun, state), {
      dedupe: false,
      settled,
    });
  }

  private async observeDeleted(uid: string, entry: Omit<Indexed, 'sent'>): Promise<void> {
    const message = { signal: taskRunObserved, arg: { state: 'deleted' as const } };
    await this.ingest.send(target({ ...entry, uid }, 'deleted'), () => message, {
      dedupe: false,
      settled: (outcome) => {
        if (outcome === 'sent' || outcome === 'not-running') this.index.delete(uid);
      },
    });
  }

  /** Running TaskRun workflows whose TaskRun is gone: deleted while no bridge was watching. */
  private async sweepOrphans(seen: Set<string>): Promise<void> {
    const orphans = (this.runningBeforeList ?? []).filter(
      (w) => !seen.has(w.uid) && !this.index.has(w.uid),
    );
    if (orphans.length > 0)
      this.ingest.log(`resync: ${orphans.length} TaskRun(s) deleted while unobserved`);
    await Promise.all(orphans.map((o) => this.observeDeleted(o.uid, o)));
  }

  private message(
    taskRun: ContractTaskRun,
    state: TaskRunState,
  ): WorkflowMessage<TaskRunObservation> {
    // A TaskRun being deleted is told to its workflow, and starts none: whatever its clean-up
    // left is the leftover collector's (workflows/gc), as for one deleted outright. Unless the
    // original controller's finalizer holds it: nobody but a workflow would ever release that.
    const starts = state !== 'deleted' || taskRun.originalFinalizer;
    return {
      signal: taskRunObserved,
      arg: { state, ...(taskRun.originalFinalizer ? { originalFinalizer: true } : {}) },
      ...(starts ? { start: taskRunStart(taskRun, this.options.taskRunMaxHistory) } : {}),
    };
  }
}

/** Where a TaskRun's messages go; its log fields are the worker's, to search both at once. */
function target(t: { namespace: string; name: string; uid: string }, state: string) {
  const workflowId = WORKFLOW_ID.taskRun(t.namespace, t.name, t.uid);
  return {
    workflowId,
    subject: `TaskRun ${t.namespace}/${t.name} (${state})`,
    logFields: { k8sNamespace: t.namespace, k8sName: t.name, workflowId },
  };
}
