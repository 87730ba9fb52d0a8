// Where the engine keeps the SSH host keys it trusted on first use, and those it generated for
// the cloud VMs it launched: ConfigMap hostflow-host-keys
// in the engine namespace, one data key per host. Durable (a pod restart loses nothing), shared
// by every worker, and written with optimistic concurrency, so two workers racing to record one
// host's first key agree on the one that got there first.
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../shared/ownership.js';
import { isConflict, isNotFound, rethrowKube } from './errors.js';

export const HOST_KEY_STORE_NAME = 'hostflow-host-keys';
const ATTEMPTS = 5;

export interface HostKeyStore {
  /** Records `key` for `id` unless one is there already; returns the one that holds. */
  recordFirst(id: string, key: string): Promise<{ key: string; recorded: boolean }>;
  /** The key recorded for `id`, if any. */
  held(id: string): Promise<string | undefined>;
  /** Records `record` for `id`, replacing what is there; idempotent. */
  remember(id: string, record: string): Promise<void>;
  /**
   * Removes the record of `id` if `isOurs(record)`; idempotent. A VM's generated key goes when
   * the VM does, so the store holds only hosts that may still answer (a ConfigMap is capped at
   * 1 MiB, about 8,000 records).
   */
  forget(id: string, isOurs: (record: string) => boolean): Promise<void>;
}

/** A ConfigMap data key for `id` (a host name or an address): `[-._a-zA-Z0-9]` only. */
export const storeKey = (id: string) => id.replace(/[^-._a-zA-Z0-9]/g, '_');

export function createHostKeyStore(deps: {
  core: CoreV1Api;
  engineNamespace: string;
}): HostKeyStore {
  const { core, engineNamespace: namespace } = deps;
  const where = `ConfigMap ${namespace}/${HOST_KEY_STORE_NAME}`;

  async function read(): Promise<V1ConfigMap | undefined> {
    try {
      return await core.readNamespacedConfigMap({ name: HOST_KEY_STORE_NAME, namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      rethrowKube(`read ${where}`, err);
    }
  }

  /**
   * Reads the store, asks `change` what the record of `dataKey` becomes (a value, `null` to
   * remove it, `undefined` to leave it), and writes that with the resourceVersion read, so a
   * write that raced ours fails with 409 and is read again, never lost.
   */
  async function update(
    dataKey: string,
    action: 'record' | 'remove',
    change: (held: string | undefined) => string | null | undefined,
  ): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const current = await read();
      const next = change(current?.data?.[dataKey]);
      if (next === undefined || (next === null && !current)) return;
      const data = { ...current?.data };
      if (next === null) delete data[dataKey];
      else data[dataKey] = next;
      try {
        if (!current) {
          await core.createNamespacedConfigMap({
            namespace,
            body: {
              metadata: { name: HOST_KEY_STORE_NAME, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
              data,
            },
          });
        } else {
          await core.replaceNamespacedConfigMap({
            name: HOST_KEY_STORE_NAME,
            namespace,
            body: { ...current, data },
          });
        }
        return;
      } catch (err) {
        if (next === null && isNotFound(err)) return;
        if (!isConflict(err))
          rethrowKube(
            `${action} host key ${dataKey} ${action === 'remove' ? 'from' : 'in'} ${where}`,
            err,
          );
      }
    }
    throw ApplicationFailure.retryable(
      `${where} kept changing while host key ${dataKey} was ${action === 'remove' ? 'removed' : 'recorded'}; retrying`,
      'KubernetesHttp409',
    );
  }

  return {
    async held(id) {
      return (await read())?.data?.[storeKey(id)];
    },
    async recordFirst(id, key) {
      let holds = key;
      let recorded = false;
      await update(storeKey(id), 'record', (held) => {
        holds = held || key;
        recorded = !held;
        return held ? undefined : key;
      });
      return { key: holds, recorded };
    },
    async remember(id, record) {
      await update(storeKey(id), 'record', (held) => (held === record ? undefined : record));
    },
    async forget(id, isOurs) {
      await update(storeKey(id), 'remove', (held) =>
        held !== undefined && isOurs(held) ? null : undefined,
      );
    },
  };
}
