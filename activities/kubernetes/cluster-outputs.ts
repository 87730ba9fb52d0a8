// Whose are `<cluster>-configmap`, `-kubeconfig` and `-ssh-key`? The cluster label is the
// tenant's choice, so the name says nothing: an output is a Provisioning's only when it carries
// the mark for that Provisioning's uid. Outputs an earlier hostflow made carry only the label
// `cluster`; one of those is taken as the Provisioning's only while it is the one Provisioning
// in the namespace with that label, so an upgrade strands nothing and a second Provisioning
// naming the same cluster can claim nothing.
import type { CustomObjectsApi, V1ObjectMeta } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { CLUSTER_LABEL, PROVISIONING_API } from '../../shared/bpa-api.js';
import { markedFor, markedForAnyone, ownershipMark, type Owner } from '../../shared/ownership.js';
import { rethrowKube } from './errors.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';

export function provisioningOwner(ref: ProvisioningRef): Owner {
  return {
    apiVersion: `${PROVISIONING_API.group}/${PROVISIONING_API.version}`,
    kind: 'Provisioning',
    ...ref,
  };
}

/** Whether an output of `cluster`, with metadata `meta`, is this Provisioning's to replace or delete. */
export function clusterOutputCheck(
  custom: CustomObjectsApi,
  ref: ProvisioningRef,
  cluster: string,
) {
  return async (meta: V1ObjectMeta | undefined): Promise<boolean> => {
    if (markedFor(meta, ref.uid)) return true;
    if (markedForAnyone(meta) || meta?.labels?.[CLUSTER_LABEL] !== cluster) return false;
    try {
      const list = (await custom.listNamespacedCustomObject({
        ...PROVISIONING_API,
        namespace: ref.namespace,
        labelSelector: `${CLUSTER_LABEL}=${cluster}`,
      })) as { items?: Array<{ metadata?: { uid?: string } }> };
      const items = list.items ?? [];
      return items.length === 1 && items[0]?.metadata?.uid === ref.uid;
    } catch (err) {
      rethrowKube(`list the Provisionings of cluster ${cluster} in ${ref.namespace}`, err);
    }
  };
}

/** An output's metadata as the engine writes it: the cluster label and its Provisioning's mark. */
export function clusterOutputMetadata(ref: ProvisioningRef, cluster: string, name: string) {
  const mark = ownershipMark(provisioningOwner(ref));
  return {
    name,
    labels: { ...mark.labels, [CLUSTER_LABEL]: cluster },
    annotations: mark.annotations,
  };
}

/** The step's failure when an output of that name is another's: `what` it is, and what was not done. */
export function clusterOutputNotOurs(what: string, notDone: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `${what} is not this Provisioning's (another Provisioning or a person made it), so ${notDone}: ` +
      `give the cluster a label no other Provisioning here uses, or delete ${what}`,
    'ClusterOutputNotOwned',
  );
}
