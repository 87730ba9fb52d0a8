// A list+watch of one namespaced custom resource kind (all namespaces, or one), handing each
// object to `seen` with whether it is gone; a full relist reports every object again and the
// ones that vanished meanwhile as gone, so nothing missed while the bridge was down is lost.
import type { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { ListWatch } from './list-watch.js';
import type { LineLog } from '../runtime/logger.js';
import { crdSource } from '../shared/families.js';

export interface NamespacedObject {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
}

export interface ResourceWatchOptions {
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  resyncMs: number;
  watchNamespace?: string;
  log?: LineLog;
}

export function resourceWatch<T extends NamespacedObject>(
  kind: string,
  api: { group: string; version: string; plural: string },
  options: ResourceWatchOptions,
  seen: (item: T, gone: boolean, relisted: boolean) => Promise<void>,
  listed: () => void = () => undefined,
): ListWatch<T> {
  const { group, version, plural } = api;
  const ns = options.watchNamespace;
  const key = (item: T) => `${item.metadata.namespace}/${item.metadata.name}`;
  let known = new Map<string, T>();
  let relisting = new Map<string, T>();
  return new ListWatch<T>({
    name: `${kind} watch`,
    kubeConfig: options.kubeConfig,
    watchPath: ns
      ? `/apis/${group}/${version}/namespaces/${ns}/${plural}`
      : `/apis/${group}/${version}/${plural}`,
    resyncMs: options.resyncMs,
    crdFrom: crdSource(api),
    ...(options.log ? { log: options.log } : {}),
    list: async (continueToken) => {
      const page = { ...api, limit: 500, _continue: continueToken };
      const list = (await (ns
        ? options.custom.listNamespacedCustomObject({ ...page, namespace: ns })
        : options.custom.listClusterCustomObject(page))) as {
        items: T[];
        metadata?: { resourceVersion?: string; continue?: string };
      };
      return {
        items: list.items,
        resourceVersion: list.metadata?.resourceVersion ?? '',
        continueToken: list.metadata?.continue || undefined,
      };
    },
    onListStart: () => {
      relisting = new Map();
    },
    onListPage: async (items) => {
      for (const item of items) {
        relisting.set(key(item), item);
        await seen(item, false, true);
      }
    },
    onListDone: async () => {
      for (const [name, item] of known) if (!relisting.has(name)) await seen(item, true, true);
      known = relisting;
      listed();
    },
    onEvent: async (type, item) => {
      if (type === 'DELETED') known.delete(key(item));
      else known.set(key(item), item);
      await seen(item, type === 'DELETED', false);
    },
  });
}
