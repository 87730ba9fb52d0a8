// Kubernetes adapter for Provisioning resources: their finalizer, their status, their Events,
// and what a finished install leaves next to them (the role → IP ConfigMap the original wrote
// as its only success signal, `<cluster>-configmap`, and the kubeconfig Secret).
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  INSTALLER_KEY_FINALIZER,
  installerKeySecretName,
  kubeconfigSecretName,
  PROVISIONING_API,
  PROVISIONING_FINALIZER,
} from '../../shared/bpa-api.js';
import { clusterOutputCheck, clusterOutputMetadata, provisioningOwner } from './cluster-outputs.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { setObjectFinalizer, setSecretFinalizer } from './object-finalizers.js';
import { customRef } from './object-ref.js';
import { writeObjectStatus } from './object-status.js';
import { createOrReplaceIfOurs, deleteIfOurs } from './owned-objects.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';

export function createProvisioningActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  const provisioning = (ref: ProvisioningRef) => customRef(PROVISIONING_API, 'Provisioning', ref);

  return {
    /** Added before anything outside is touched; false when the resource is gone. */
    addProvisioningFinalizer: (ref: ProvisioningRef) =>
      setObjectFinalizer(custom, provisioning(ref), PROVISIONING_FINALIZER, true),

    removeProvisioningFinalizer: async (ref: ProvisioningRef): Promise<void> =>
      void (await setObjectFinalizer(custom, provisioning(ref), PROVISIONING_FINALIZER, false)),

    /** Merges `status` into the resource's status (conditions replace as a whole). */
    writeProvisioningStatus: (input: { ref: ProvisioningRef; status: Record<string, unknown> }) =>
      writeObjectStatus(custom, provisioning(input.ref), input.status),

    recordProvisioningEvent: ({ ref, ...event }: ObjectEvent & { ref: ProvisioningRef }) =>
      recordObjectEvent(core, provisioning(ref), event),

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
