// Another Cluster API infrastructure provider's kind, as small as Cluster API's contract lets it
// be (its label says the contract): what the tests play the neighbour with, beside hostflow.
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';

export const OTHER_PROVIDER_GROUP = 'infrastructure.cluster.x-k8s.io';

export function otherProviderCrd(kind: string): V1CustomResourceDefinition {
  const plural = `${kind.toLowerCase()}s`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${OTHER_PROVIDER_GROUP}`,
      labels: { 'cluster.x-k8s.io/v1beta2': 'v1beta2' },
    },
    spec: {
      group: OTHER_PROVIDER_GROUP,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1beta2',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
          },
        },
      ],
    },
  };
}
