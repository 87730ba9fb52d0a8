// Kubernetes adapter for ClusterOperation resources: their status and their Events, and the
// ConfigMaps their custom actions come from. The Provisioning's workflow writes a queued
// operation's status; the operation's own workflow the rest.
import { ApplicationFailure } from '@temporalio/common';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { CLUSTER_OPERATION_API, type CustomActionRef } from '../../shared/cluster-operation-api.js';
import { MAX_ACTION_BYTES, MAX_ACTIONS_BYTES } from '../../shared/cluster-operation-limits.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { provisioningOwner } from './cluster-outputs.js';
import { isNotFound, rethrowKube } from './errors.js';
import { deleteIfOurs } from './owned-objects.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { customRef, type CustomResourceRef } from './object-ref.js';
import { writeObjectStatus } from './object-status.js';

/** Keys of a ConfigMap a message names. */
const MAX_KEYS_SAID = 20;

/** The phases of an operation that has ended. */
const ENDED = ['Succeeded', 'Failed', 'Cancelled'];

interface EndedOperation {
  metadata: { name: string; uid?: string; creationTimestamp?: string };
  spec?: { provisioning?: string };
  status?: { phase?: string; log?: string; steps?: Array<{ log?: string }> };
}

export function createClusterOperationActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  const operation = (ref: CustomResourceRef) =>
    customRef(CLUSTER_OPERATION_API, 'ClusterOperation', ref);
  return {
    /** Merges `status` into the operation's status (its steps replace as a whole). */
    writeClusterOperationStatus: (input: {
      ref: CustomResourceRef;
      status: Record<string, unknown>;
    }) => writeObjectStatus(custom, operation(input.ref), input.status, { tenant: true }),

    recordClusterOperationEvent: ({ ref, ...event }: ObjectEvent & { ref: CustomResourceRef }) =>
      recordObjectEvent(core, operation(ref), event),

    /**
     * Deletes the ended operations of a Provisioning beyond the newest `keep`: only those its
     * workflow ran (`ran`, by uid) that still name it. The log files their status names, to remove.
     */
    async pruneClusterOperations(input: {
      provisioning: ProvisioningRef;
      ran: string[];
      keep: number;
    }): Promise<{ deleted: string[]; logs: string[] }> {
      const { namespace, name } = input.provisioning;
      let items: EndedOperation[];
      try {
        items = (
          (await custom.listNamespacedCustomObject({ ...CLUSTER_OPERATION_API, namespace })) as {
            items: EndedOperation[];
          }
        ).items;
      } catch (err) {
        rethrowKube(`list the ClusterOperations in ${namespace}`, err);
      }
      const ended = items
        .filter((op) => op.spec?.provisioning === name && ENDED.includes(op.status?.phase ?? ''))
        .sort(
          (a, b) =>
            (b.metadata.creationTimestamp ?? '').localeCompare(
              a.metadata.creationTimestamp ?? '',
            ) || b.metadata.name.localeCompare(a.metadata.name),
        );
      const deleted: string[] = [];
      const logs: string[] = [];
      for (const op of ended.slice(input.keep)) {
        const target = { namespace, name: op.metadata.name };
        const outcome = await deleteIfOurs(
          core,
          provisioningOwner(input.provisioning),
          {
            what: `ClusterOperation ${namespace}/${op.metadata.name}`,
            read: () => custom.getNamespacedCustomObject({ ...CLUSTER_OPERATION_API, ...target }),
            delete: (preconditions) =>
              custom.deleteNamespacedCustomObject({
                ...CLUSTER_OPERATION_API,
                ...target,
                body: { preconditions },
              }),
          },
          {
            isOurs: (meta) => input.ran.includes(meta?.uid ?? ''),
            why: "this Provisioning's workflow did not run it (or no longer remembers it)",
          },
        );
        if (outcome !== 'deleted') continue;
        deleted.push(op.metadata.name);
        const status = op.status ?? {};
        for (const log of [status.log, ...(status.steps ?? []).map((step) => step.log)]) {
          if (log && !logs.includes(log)) logs.push(log);
        }
      }
      return { deleted, logs };
    },

    /**
     * Each custom action's text, from its ConfigMap in the operation's namespace, in order. The
     * texts go into the operation's history: each and all together are bounded, in bytes.
     */
    async readCustomActions(input: {
      namespace: string;
      actions: CustomActionRef[];
    }): Promise<string[]> {
      const texts: string[] = [];
      let total = 0;
      for (const { configMap, key } of input.actions) {
        const where = `ConfigMap ${input.namespace}/${configMap}`;
        let data: Record<string, string>;
        try {
          data =
            (await core.readNamespacedConfigMap({ namespace: input.namespace, name: configMap }))
              .data ?? {};
        } catch (err) {
          if (isNotFound(err)) {
            throw ApplicationFailure.nonRetryable(`${where} does not exist`, 'ActionSourceMissing');
          }
          rethrowKube(`read ${where}`, err);
        }
        const text = data[key];
        if (text === undefined) {
          throw ApplicationFailure.nonRetryable(
            `${where} has no key ${key} (it has ${someKeys(Object.keys(data))})`,
            'ActionSourceMissing',
          );
        }
        const bytes = Buffer.byteLength(text);
        if (bytes > MAX_ACTION_BYTES) {
          throw ApplicationFailure.nonRetryable(
            `${where} key ${key} is ${bytes} bytes: an action may be at most ${MAX_ACTION_BYTES}`,
            'ActionSourceTooLarge',
          );
        }
        total += bytes;
        texts.push(text);
      }
      if (total > MAX_ACTIONS_BYTES) {
        throw ApplicationFailure.nonRetryable(
          `its custom actions are ${total} bytes together: at most ${MAX_ACTIONS_BYTES}`,
          'ActionSourceTooLarge',
        );
      }
      return texts;
    },
  };
}

export type ClusterOperationActivities = ReturnType<typeof createClusterOperationActivities>;

/** A ConfigMap's keys for a message: the first few, and how many more (it may have thousands). */
function someKeys(keys: string[]): string {
  if (!keys.length) return 'none';
  const shown = keys.slice(0, MAX_KEYS_SAID).join(', ');
  return keys.length > MAX_KEYS_SAID ? `${shown} and ${keys.length - MAX_KEYS_SAID} more` : shown;
}
