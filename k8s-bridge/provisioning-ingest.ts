// Ingests Provisionings as the bridge does TaskRuns: each create, change and delete becomes a
// signal to `provisioning/<ns>/<name>`, started if need be; the periodic relist sends every
// one again (the workflow ignores what it has seen), so nothing missed while down is lost.
import type { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { WORKFLOW_ID } from '../platform-config/contract.js';
import {
  CLUSTER_LABEL,
  IP_SOURCE_ANNOTATION,
  PROVISIONING_API,
  RETRY_ANNOTATION,
  type ProvisioningSpec,
} from '../shared/bpa-api.js';
import { innermostMessage } from '../shared/failures.js';
import { provisioningObserved, type ProvisioningObservation } from '../shared/messages.js';
import { KIND, SA } from '../shared/search-attributes.js';
import type { ProvisioningWorkflow } from '../shared/types.js';
import { ListWatch } from './list-watch.js';

interface ProvisioningObject {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec?: ProvisioningSpec;
}

export interface ProvisioningIngestOptions {
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  temporal: Client;
  taskQueue: string;
  resyncMs: number;
  watchNamespace?: string;
  log?: (message: string) => void;
}

export class ProvisioningIngest {
  private readonly listWatch: ListWatch<ProvisioningObject>;
  private running?: Promise<void>;
  private readonly log: (message: string) => void;

  constructor(private readonly options: ProvisioningIngestOptions) {
    this.log = options.log ?? ((m) => console.log(m));
    const { group, version, plural } = PROVISIONING_API;
    const ns = options.watchNamespace;
    this.listWatch = new ListWatch<ProvisioningObject>({
      name: 'Provisioning watch',
      kubeConfig: options.kubeConfig,
      watchPath: ns
        ? `/apis/${group}/${version}/namespaces/${ns}/${plural}`
        : `/apis/${group}/${version}/${plural}`,
      resyncMs: options.resyncMs,
      log: this.log,
      list: async (continueToken) => {
        const page = { ...PROVISIONING_API, limit: 500, _continue: continueToken };
        const list = (await (ns
          ? options.custom.listNamespacedCustomObject({ ...page, namespace: ns })
          : options.custom.listClusterCustomObject(page))) as {
          items: ProvisioningObject[];
          metadata?: { resourceVersion?: string; continue?: string };
        };
        return {
          items: list.items,
          resourceVersion: list.metadata?.resourceVersion ?? '',
          continueToken: list.metadata?.continue || undefined,
        };
      },
      onListStart: () => undefined,
      onListPage: async (items) => {
        for (const item of items) await this.observed(item, false);
      },
      onListDone: () => undefined,
      onEvent: (type, item) => this.observed(item, type === 'DELETED'),
    });
  }

  start(): void {
    this.running ??= this.listWatch.run();
  }

  async stop(): Promise<void> {
    this.listWatch.stop();
    await this.running;
  }

  private async observed(item: ProvisioningObject, gone: boolean): Promise<void> {
    const {
      namespace,
      name,
      uid,
      generation = 1,
      labels,
      annotations,
      deletionTimestamp,
    } = item.metadata;
    const workflowId = WORKFLOW_ID.provisioning(namespace, name);
    const observation: ProvisioningObservation = {
      uid,
      generation,
      ...(labels?.[CLUSTER_LABEL] ? { cluster: labels[CLUSTER_LABEL] } : {}),
      spec: item.spec ?? {},
      ipSource: annotations?.[IP_SOURCE_ANNOTATION] === 'dhcp' ? 'dhcp' : 'nic',
      deleting: gone || deletionTimestamp !== undefined,
      ...(annotations?.[RETRY_ANNOTATION] ? { retry: annotations[RETRY_ANNOTATION] } : {}),
    };
    try {
      if (gone) {
        // Gone for good: a running workflow cleans up; none running, nothing to do.
        await this.options.temporal.workflow
          .getHandle(workflowId)
          .signal(provisioningObserved, observation);
        return;
      }
      await this.options.temporal.workflow.signalWithStart<
        ProvisioningWorkflow,
        [ProvisioningObservation]
      >('provisioningWorkflow', {
        workflowId,
        taskQueue: this.options.taskQueue,
        args: [{ namespace, name }],
        signal: provisioningObserved,
        signalArgs: [observation],
        typedSearchAttributes: [
          { key: SA.kind, value: KIND.provisioning },
          { key: SA.namespace, value: namespace },
          { key: SA.name, value: name },
        ],
        staticSummary: `Provisioning ${namespace}/${name}`,
        staticDetails: `Installs cluster ${observation.cluster ?? '(no cluster label)'} with kubespray on the BareMetalHosts it names, and resets them when it is deleted.`,
      });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return;
      this.log(
        `Provisioning ${namespace}/${name}: could not signal ${workflowId}: ${innermostMessage(err)}`,
      );
    }
  }
}
