// Keeps a new cluster's admin kubeconfig as a Secret `<cluster>-kubeconfig` next to its
// Provisioning (key `value`, as Cluster API names it), with the server rewritten to the first
// control plane's address: kubespray may write a private or loopback one. The kubeconfig never
// leaves the worker except into this Secret, which is marked as the Provisioning's: one that is
// another's is never overwritten.
import type { CoreV1Api, CustomObjectsApi, V1Secret } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { stringify } from 'yaml';
import { parseSecretYaml } from '../../shared/secret-yaml.js';
import { kubeconfigSecretName } from '../../shared/bpa-api.js';
import {
  clusterOutputCheck,
  clusterOutputMetadata,
  clusterOutputNotOurs,
  provisioningOwner,
} from './cluster-outputs.js';
import { createOrReplaceIfOurs } from './owned-objects.js';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';

export const KUBECONFIG_KEY = 'value';

export function createKubeconfigStore(core: CoreV1Api, custom: CustomObjectsApi) {
  return async function storeKubeconfig(input: {
    namespace: string;
    cluster: string;
    kubeconfig: string;
    server: string;
    owner: ProvisioningRef;
  }): Promise<string> {
    const parsed = parseSecretYaml(input.kubeconfig, `the kubeconfig of cluster ${input.cluster}`);
    if ('error' in parsed) throw ApplicationFailure.nonRetryable(parsed.error, 'KubeconfigInvalid');
    const config = (parsed.value ?? {}) as {
      clusters?: Array<{ cluster?: { server?: string } }>;
    };
    for (const entry of config.clusters ?? []) {
      if (entry.cluster) entry.cluster.server = input.server;
    }
    const { namespace } = input;
    const name = kubeconfigSecretName(input.cluster);
    const body: V1Secret = {
      metadata: clusterOutputMetadata(input.owner, input.cluster, name),
      type: 'Opaque',
      stringData: { [KUBECONFIG_KEY]: stringify(config) },
    };
    const written = await createOrReplaceIfOurs(
      core,
      provisioningOwner(input.owner),
      {
        what: `Secret ${namespace}/${name}`,
        read: () => core.readNamespacedSecret({ name, namespace }),
        create: (b) => core.createNamespacedSecret({ namespace, body: b }),
        replace: (b) => core.replaceNamespacedSecret({ name, namespace, body: b }),
      },
      body,
      { isOurs: clusterOutputCheck(custom, input.owner, input.cluster) },
    );
    if (written === 'not-ours') {
      throw clusterOutputNotOurs(`Secret ${namespace}/${name}`, 'the kubeconfig was not stored');
    }
    return name;
  };
}
