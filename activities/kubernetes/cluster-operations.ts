// Kubernetes adapter for ClusterOperation resources: their status and their Events, and the
// ConfigMaps their custom actions come from. The Provisioning's workflow writes a queued
// operation's status; the operation's own workflow the rest.
import { ApplicationFailure } from '@temporalio/common';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { CLUSTER_OPERATION_API, type CustomActionRef } from '../../shared/cluster-operation-api.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { provisioningOwner } from './cluster-outputs.js';
import { isNotFound, rethrowKube } from './errors.js';
import { deleteIfOurs } from './owned-objects.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { customRef, type CustomResourceRef } from './object-ref.js';
import { writeObjectStatus } from './object-status.js';

/** The phases of an operation that has ended. */
const ENDED = ['Succeeded', 'Failed', 'Cancelled'];

interface EndedOperation {
  metadata: { name: string; uid?: string; creationTimestamp?: string };
  spec?: { provisioning?: string };
  status?: { phase?: string; log?: string; steps?: Array<{ log?: string }> };
}

/** An action's text is kept in the operation's history: it stays small. */
const MAX_ACTION_BYTES = 64 * 1024;

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

    /** Each custom action's text, from its ConfigMap in the operation's namespace, in order. */
    async readCustomActions(input: {
      namespace: string;
      actions: CustomActionRef[];
    }): Promise<string[]> {
      const texts: string[] = [];
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
          const keys = Object.keys(data);
          throw ApplicationFailure.nonRetryable(
            `${where} has no key ${key} (it has ${keys.length ? keys.join(', ') : 'none'})`,
            'ActionSourceMissing',
          );
        }
        if (text.length > MAX_ACTION_BYTES) {
          throw ApplicationFailure.nonRetryable(
            `${where} key ${key} is ${text.length} bytes: an action may be at most ${MAX_ACTION_BYTES}`,
            'ActionSourceTooLarge',
          );
        }
        texts.push(text);
      }
      return texts;
    },
  };
}

export type ClusterOperationActivities = ReturnType<typeof createClusterOperationActivities>;
