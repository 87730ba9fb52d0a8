// Keeps a new cluster's admin kubeconfig as a Secret `<cluster>-kubeconfig` next to its
// Provisioning (key `value`, as Cluster API names it), with the server rewritten to the first
// control plane's address: kubespray may write a private or loopback one. The kubeconfig never
// leaves the worker except into this Secret.
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { stringify } from 'yaml';
import { parseSecretYaml } from '../../shared/secret-yaml.js';
import { CLUSTER_LABEL, kubeconfigSecretName } from '../../shared/bpa-api.js';
import { createOrReplace } from './create-or-replace.js';

export const KUBECONFIG_KEY = 'value';

export function createKubeconfigStore(core: CoreV1Api) {
  return async function storeKubeconfig(input: {
    namespace: string;
    cluster: string;
    kubeconfig: string;
    server: string;
  }): Promise<string> {
    const parsed = parseSecretYaml(input.kubeconfig, `the kubeconfig of cluster ${input.cluster}`);
    if ('error' in parsed) throw ApplicationFailure.nonRetryable(parsed.error, 'KubeconfigInvalid');
    const config = (parsed.value ?? {}) as {
      clusters?: Array<{ cluster?: { server?: string } }>;
    };
    for (const entry of config.clusters ?? []) {
      if (entry.cluster) entry.cluster.server = input.server;
    }
    const name = kubeconfigSecretName(input.cluster);
    const body: V1Secret = {
      metadata: { name, labels: { [CLUSTER_LABEL]: input.cluster } },
      type: 'Opaque',
      stringData: { [KUBECONFIG_KEY]: stringify(config) },
    };
    await createOrReplace(
      `Secret ${input.namespace}/${name}`,
      () => core.createNamespacedSecret({ namespace: input.namespace, body }),
      () => core.replaceNamespacedSecret({ name, namespace: input.namespace, body }),
    );
    return name;
  };
}
