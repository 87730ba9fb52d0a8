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
  CLUSTER_LABEL,
  INSTALLER_KEY_FINALIZER,
  installerKeySecretName,
  kubeconfigSecretName,
  PROVISIONING_API,
  PROVISIONING_FINALIZER,
} from '../../shared/bpa-api.js';
import { setSecretFinalizer } from './custom-finalizer.js';
import { isNotFound, rethrowKube } from './errors.js';
import { createOrReplace } from './create-or-replace.js';
import { recordEvent } from './events.js';

export interface ProvisioningRef {
  namespace: string;
  name: string;
  uid: string;
}

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

    /** The original's success marker: `<cluster>-configmap` with MASTER_<label> / WORKER_<label> → IP. */
    async writeClusterIpMap(input: {
      namespace: string;
      cluster: string;
      data: Record<string, string>;
    }): Promise<void> {
      const name = `${input.cluster}-configmap`;
      const body = {
        metadata: { name, labels: { [CLUSTER_LABEL]: input.cluster } },
        data: input.data,
      };
      await createOrReplace(
        `ConfigMap ${input.namespace}/${name}`,
        () => core.createNamespacedConfigMap({ namespace: input.namespace, body }),
        () => core.replaceNamespacedConfigMap({ name, namespace: input.namespace, body }),
      );
    },

    /** Removes what an install left next to the resource: IP map, kubeconfig, installer key. */
    async deleteClusterOutputs(input: { namespace: string; cluster: string }): Promise<void> {
      const calls = [
        () =>
          core.deleteNamespacedConfigMap({
            name: `${input.cluster}-configmap`,
            namespace: input.namespace,
          }),
        () =>
          core.deleteNamespacedSecret({
            name: kubeconfigSecretName(input.cluster),
            namespace: input.namespace,
          }),
        // The hosts still list its public key: without the private key, that grants nobody. Its
        // finalizer kept it for the reset, which is done now.
        async () => {
          const key = { name: installerKeySecretName(input.cluster), namespace: input.namespace };
          await setSecretFinalizer(core, key, INSTALLER_KEY_FINALIZER, false);
          await core.deleteNamespacedSecret(key);
        },
      ];
      for (const call of calls) {
        try {
          await call();
        } catch (err) {
          if (!isNotFound(err)) rethrowKube(`clean up cluster ${input.cluster}`, err);
        }
      }
    },
  };
}

export type ProvisioningActivities = ReturnType<typeof createProvisioningActivities>;
