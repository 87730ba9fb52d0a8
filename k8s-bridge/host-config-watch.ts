// Watches the host-config ConfigMap and hands each new version to the hostconfig workflow,
// which reports its problems and tells the allocators to reload.
import type { CoreV1Api, KubeConfig, V1ConfigMap } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { hostConfigObserved } from '../shared/messages.js';
import type { HostConfigWorkflow } from '../shared/types.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { ListWatch } from './list-watch.js';
import type { LineLog } from '../runtime/logger.js';

export interface HostConfigWatchOptions {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  temporal: Client;
  taskQueue: string;
  engineNamespace: string;
  resyncMs: number;
  log?: LineLog;
}

export class HostConfigWatch {
  private readonly listWatch: ListWatch<V1ConfigMap>;
  private lastSent?: string;
  private running?: Promise<void>;
  private readonly log: LineLog;

  constructor(private readonly options: HostConfigWatchOptions) {
    this.log = options.log ?? ((m) => console.log(m));
    const fieldSelector = `metadata.name=${HOST_CONFIG_NAME}`;
    let seenInList = false;
    this.listWatch = new ListWatch<V1ConfigMap>({
      name: 'host-config watch',
      kubeConfig: options.kubeConfig,
      watchPath: `/api/v1/namespaces/${options.engineNamespace}/configmaps`,
      watchParams: { fieldSelector },
      resyncMs: options.resyncMs,
      log: this.log,
      list: async (continueToken) => {
        const list = await options.core.listNamespacedConfigMap({
          namespace: options.engineNamespace,
          fieldSelector,
          _continue: continueToken,
        });
        return {
          items: list.items,
          resourceVersion: list.metadata?.resourceVersion ?? '',
          continueToken: list.metadata?._continue,
        };
      },
      onListStart: () => {
        seenInList = false;
      },
      onListPage: async (items) => {
        for (const item of items) {
          seenInList = true;
          await this.observed(item.metadata?.resourceVersion);
        }
      },
      onListDone: async () => {
        if (!seenInList) await this.observed('absent');
      },
      onEvent: async (type, object) =>
        this.observed(
          type === 'DELETED'
            ? `deleted-${object.metadata?.resourceVersion}`
            : object.metadata?.resourceVersion,
        ),
    });
  }

  start(): void {
    this.running ??= this.listWatch.run();
  }

  async stop(): Promise<void> {
    this.listWatch.stop();
    await this.running;
  }

  private async observed(resourceVersion: string | undefined): Promise<void> {
    if (!resourceVersion || resourceVersion === this.lastSent) return;
    const { engineNamespace, taskQueue } = this.options;
    try {
      await this.options.temporal.workflow.signalWithStart<
        HostConfigWorkflow,
        [{ resourceVersion: string }]
      >('hostConfigWorkflow', {
        workflowId: WORKFLOW_ID.hostConfig(engineNamespace),
        taskQueue,
        args: [{ engineNamespace }],
        signal: hostConfigObserved,
        signalArgs: [{ resourceVersion }],
        typedSearchAttributes: [
          { key: SA.kind, value: KIND.hostConfig },
          { key: SA.namespace, value: engineNamespace },
          { key: SA.name, value: HOST_CONFIG_NAME },
        ],
        staticSummary: `host-config of ${engineNamespace}`,
        staticDetails: `Checks each version of ConfigMap ${engineNamespace}/${HOST_CONFIG_NAME} and tells the allocators to reload it.`,
      });
      this.lastSent = resourceVersion;
    } catch (err) {
      this.log(
        `signal host-config change (${resourceVersion}) failed: ${(err as Error).message}`,
        'warn',
      );
    }
  }
}
