// Watches the host-config ConfigMap and hands each new version to the hostconfig workflow,
// which reports its problems and tells the allocators to reload; through the one ingest.
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { hostConfigObserved, hostConfigStart } from '../shared/contracts/host-config.js';
import { Ingest, type IngestOptions } from './ingest.js';
import { ListWatch } from './list-watch.js';

export interface HostConfigWatchOptions extends Omit<IngestOptions, 'watchNamespace'> {
  core: CoreV1Api;
  engineNamespace: string;
}

export class HostConfigWatch {
  private readonly ingest: Ingest;

  constructor(private readonly options: HostConfigWatchOptions) {
    this.ingest = new Ingest(options);
    const fieldSelector = `metadata.name=${HOST_CONFIG_NAME}`;
    let seenInList = false;
    const listWatch = new ListWatch<V1ConfigMap>({
      name: 'host-config watch',
      kubeConfig: options.kubeConfig,
      watchPath: `/api/v1/namespaces/${options.engineNamespace}/configmaps`,
      watchParams: { fieldSelector },
      resyncMs: options.resyncMs,
      log: this.ingest.log,
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
    this.ingest.watch(listWatch);
  }

  start(): void {
    this.ingest.start();
  }

  stop(): Promise<void> {
    return this.ingest.stop();
  }

  private async observed(resourceVersion: string | undefined): Promise<void> {
    if (!resourceVersion) return;
    const { engineNamespace } = this.options;
    const target = {
      workflowId: WORKFLOW_ID.hostConfig(engineNamespace),
      subject: `host-config ${engineNamespace}/${HOST_CONFIG_NAME} (${resourceVersion})`,
    };
    const message = {
      signal: hostConfigObserved,
      arg: { resourceVersion },
      start: hostConfigStart(engineNamespace),
    };
    await this.ingest.send(target, () => message);
  }
}
