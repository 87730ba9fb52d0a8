// Kubernetes adapter for Provisioning resources: their finalizer, their status, their Events,
// and what a finished install leaves next to them (the role → IP ConfigMap the original wrote
// as its only success signal, `<cluster>-configmap`, and the kubeconfig Secret).
import {
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Api,
  type CustomObjectsApi,
} from '@kubernetes/client-node';
import {
  INSTALLER_KEY_FINALIZER,
  installerKeySecretName,
  kubeconfigSecretName,
  PROVISIONING_API,
  PROVISIONING_FINALIZER,
} from '../../shared/bpa-api.js';
import { clusterOutputCheck, clusterOutputMetadata, provisioningOwner } from './cluster-outputs.js';
import { setSecretFinalizer } from './custom-finalizer.js';
import { isNotFound, rethrowKube } from './errors.js';
import { recordEvent } from './events.js';
import { createOrReplaceIfOurs, deleteIfOurs } from './owned-objects.js';
import type { ProvisioningRef } from './provisioning-ref.js';

export type { ProvisioningRef };

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export function createProvisioningActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  const where = (ref: ProvisioningRef) => `Provisioning ${ref.namespace}/${ref.name}`;

  async function finalizers(ref: ProvisioningRef): Promise<string[] | undefined> {
    try {
      const obj = (await custom.getNamespacedCustomObject({ ...PROVISIONING_API, ...ref })) as {
        metadata?: { uid?: string; finalizers?: string[] };
      };
      return obj.metadata?.uid === ref.uid ? (obj.metadata.finalizers ?? []) : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      rethrowKube(`read ${where(ref)}`, err);
    }
  }

  /** Writes `items` as the finalizer list, if the list is still `current` (a JSON Patch test). */
  async function writeFinalizers(
    ref: ProvisioningRef,
    current: string[],
    items: string[],
  ): Promise<void> {
    try {
      await custom.patchNamespacedCustomObject(
        {
          ...PROVISIONING_API,
          ...ref,
          body: [
            { op: 'test', path: '/metadata/uid', value: ref.uid },
            current.length
              ? { op: 'test', path: '/metadata/finalizers', value: current }
              : { op: 'add', path: '/metadata/finalizers', value: [] },
            { op: 'replace', path: '/metadata/finalizers', value: items },
          ],
        },
        jsonPatch,
      );
    } catch (err) {
      if (isNotFound(err)) return;
      rethrowKube(`write the finalizers of ${where(ref)}`, err); // 422 on a failed test: retried
    }
  }

  return {
    /** Added before anything outside is touched; false when the resource is gone. */
    async addProvisioningFinalizer(ref: ProvisioningRef): Promise<boolean> {
      const current = await finalizers(ref);
      if (current === undefined) return false;
      if (!current.includes(PROVISIONING_FINALIZER)) {
        await writeFinalizers(ref, current, [...current, PROVISIONING_FINALIZER]);
      }
      return true;
    },

    async removeProvisioningFinalizer(ref: ProvisioningRef): Promise<void> {
      const current = await finalizers(ref);
      if (!current?.includes(PROVISIONING_FINALIZER)) return;
      await writeFinalizers(
        ref,
        current,
        current.filter((f) => f !== PROVISIONING_FINALIZER),
      );
    },

    /** Merges `status` into the resource's status (conditions replace as a whole). */
    async writeProvisioningStatus(input: {
      ref: ProvisioningRef;
      status: Record<string, unknown>;
    }): Promise<void> {
      try {
        await custom.patchNamespacedCustomObjectStatus(
          { ...PROVISIONING_API, ...input.ref, body: { status: input.status } },
          mergePatch,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowKube(`write the status of ${where(input.ref)}`, err);
      }
    },

    async recordProvisioningEvent(input: {
      ref: ProvisioningRef;
      type: 'Normal' | 'Warning';
      reason: string;
      message: string;
      /** Same key, same Event: a retried call does not repeat it. */
      dedupKey: string;
    }): Promise<void> {
      await recordEvent(core, {
        involvedObject: {
          apiVersion: `${PROVISIONING_API.group}/${PROVISIONING_API.version}`,
          kind: 'Provisioning',
          ...input.ref,
        },
        type: input.type,
        reason: input.reason,
        message: input.message,
        dedupKey: `${input.ref.uid}/${input.dedupKey}`,
      });
    },

    /**
     * The original's success marker: `<cluster>-configmap` with MASTER_<label> / WORKER_<label> →
     * IP, marked as this Provisioning's. One that is another's is left alone (with an Event).
     */
    async writeClusterIpMap(input: {
      namespace: string;
      cluster: string;
      data: Record<string, string>;
      owner: ProvisioningRef;
    }): Promise<'written' | 'not-ours'> {
      const name = `${input.cluster}-configmap`;
      const { namespace } = input;
      const body = {
        metadata: clusterOutputMetadata(input.owner, input.cluster, name),
        data: input.data,
      };
      return createOrReplaceIfOurs(
        core,
        provisioningOwner(input.owner),
        {
          what: `ConfigMap ${namespace}/${name}`,
          read: () => core.readNamespacedConfigMap({ name, namespace }),
          create: (b) => core.createNamespacedConfigMap({ namespace, body: b }),
          replace: (b) => core.replaceNamespacedConfigMap({ name, namespace, body: b }),
        },
        body,
        { isOurs: clusterOutputCheck(custom, input.owner, input.cluster) },
      );
    },

    /**
     * Removes what an install left next to the resource (IP map, kubeconfig, installer key), each
     * only if it is this Provisioning's: another's, or one a person wrote, stays (with an Event).
     */
    async deleteClusterOutputs(input: {
      namespace: string;
      cluster: string;
      owner: ProvisioningRef;
    }): Promise<void> {
      const { namespace, cluster } = input;
      const owner = provisioningOwner(input.owner);
      const isOurs = clusterOutputCheck(custom, input.owner, cluster);
      const configMap = `${cluster}-configmap`;
      await deleteIfOurs(
        core,
        owner,
        {
          what: `ConfigMap ${namespace}/${configMap}`,
          read: () => core.readNamespacedConfigMap({ name: configMap, namespace }),
          delete: (preconditions) =>
            core.deleteNamespacedConfigMap({ name: configMap, namespace, body: { preconditions } }),
        },
        { isOurs },
      );
      for (const name of [kubeconfigSecretName(cluster), installerKeySecretName(cluster)]) {
        const secret = { name, namespace };
        await deleteIfOurs(
          core,
          owner,
          {
            what: `Secret ${namespace}/${name}`,
            read: () => core.readNamespacedSecret(secret),
            delete: async (preconditions) => {
              // The installer key's finalizer kept it for the reset, which is done now. The
              // hosts still list its public key: without the private key, that grants nobody.
              if (name === installerKeySecretName(cluster)) {
                await setSecretFinalizer(core, secret, INSTALLER_KEY_FINALIZER, false);
                return core.deleteNamespacedSecret({
                  ...secret,
                  body: { preconditions: { uid: preconditions.uid } },
                });
              }
              return core.deleteNamespacedSecret({ ...secret, body: { preconditions } });
            },
          },
          { isOurs },
        );
      }
    },
  };
}

export type ProvisioningActivities = ReturnType<typeof createProvisioningActivities>;
