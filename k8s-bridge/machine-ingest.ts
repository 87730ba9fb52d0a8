// Ingests Cluster API Machines as the bridge does TaskRuns: each has its workflow
// (`machine/<ns>/<name>`), started or signalled on every create, change and delete, with what the
// workflow acts on (spec, deletion, pause, hooks, skip annotations). The periodic relist sends
// every Machine again and the ones deleted while the bridge was down as gone.
import type { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { innermostMessage } from '../shared/failures.js';
import { MACHINE_ANNOTATIONS, MACHINE_API, type MachineSpec } from '../shared/machine-api.js';
import { machineObserved, type MachineObservation } from '../shared/messages.js';
import { KIND, SA } from '../shared/search-attributes.js';
import type { ListWatch } from './list-watch.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';
import type { LineLog } from '../runtime/logger.js';

export interface MachineObject extends NamespacedObject {
  spec?: MachineSpec;
}

export interface MachineIngestOptions {
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  temporal: Client;
  taskQueue: string;
  resyncMs: number;
  watchNamespace?: string;
  log?: LineLog;
}

export function machineObservation(item: MachineObject, gone: boolean): MachineObservation {
  const annotations = item.metadata.annotations ?? {};
  const hooks = (prefix: string) =>
    Object.keys(annotations)
      .filter((key) => key.startsWith(`${prefix}/`))
      .sort();
  return {
    uid: item.metadata.uid,
    generation: item.metadata.generation ?? 1,
    spec: item.spec ?? {},
    deleting: gone || item.metadata.deletionTimestamp !== undefined,
    paused: MACHINE_ANNOTATIONS.paused in annotations,
    preDrainHooks: hooks(MACHINE_ANNOTATIONS.preDrainHookPrefix),
    preTerminateHooks: hooks(MACHINE_ANNOTATIONS.preTerminateHookPrefix),
    excludeDraining: MACHINE_ANNOTATIONS.excludeDraining in annotations,
    excludeVolumeWait: MACHINE_ANNOTATIONS.excludeVolumeWait in annotations,
  };
}

export class MachineIngest {
  private readonly watch: ListWatch<MachineObject>;
  /** What each workflow was sent last: an unchanged Machine is not resent, except on relist. */
  private readonly sent = new Map<string, string>();
  private running?: Promise<void>;
  private readonly log: LineLog;

  constructor(private readonly options: MachineIngestOptions) {
    this.log = options.log ?? ((m) => console.log(m));
    this.watch = resourceWatch<MachineObject>(
      'Machine',
      MACHINE_API,
      { ...options, log: this.log },
      (item, gone, relisted) => this.seen(item, gone, relisted),
    );
  }

  start(): void {
    this.running ??= this.watch.run();
  }

  async stop(): Promise<void> {
    this.watch.stop();
    await this.running;
  }

  private async seen(item: MachineObject, gone: boolean, relisted: boolean): Promise<void> {
    const { namespace, name } = item.metadata;
    const workflowId = WORKFLOW_ID.machine(namespace, name);
    const observation = machineObservation(item, gone);
    const text = JSON.stringify(observation);
    if (!relisted && this.sent.get(workflowId) === text) return;
    this.sent.set(workflowId, text);
    if (gone) this.sent.delete(workflowId);
    try {
      if (gone) {
        // Gone means its finalizer was removed, by its workflow or by hand: a running one is told.
        await this.options.temporal.workflow
          .getHandle(workflowId)
          .signal(machineObserved, observation);
        return;
      }
      await this.options.temporal.workflow.signalWithStart('machineWorkflow', {
        workflowId,
        taskQueue: this.options.taskQueue,
        args: [{ namespace, name }],
        signal: machineObserved,
        signalArgs: [observation],
        typedSearchAttributes: [
          { key: SA.kind, value: KIND.machine },
          { key: SA.namespace, value: namespace },
          { key: SA.name, value: name },
        ],
        staticSummary: `Machine ${namespace}/${name}`,
        staticDetails:
          'Runs the Cluster API Machine lifecycle: bootstrap gating, infrastructure, bootstrap, ' +
          'Node join; on delete, hooks, drain, volumes, terminate, and the finalizer last.',
      });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return;
      this.sent.delete(workflowId); // told again at the next change or relist
      this.log(
        `Machine ${namespace}/${name}: could not signal ${workflowId}: ${innermostMessage(err)}`,
        'warn',
      );
    }
  }
}
