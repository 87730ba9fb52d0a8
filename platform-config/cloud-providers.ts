// The registry of cloud providers (docs/extending.md, "How to add a cloud provider"): each
// `dynamic.<cfg>.type` the engine serves, with its spec. A provider is its spec here and its
// adapter in activities/cloud/registry.ts; both registries are keyed by these types, so a type
// listed here without an adapter does not compile. Pure code: the workflows read it too.
import { AWS_PROVIDER } from './aws-config.js';
import type { CloudProviderSpec } from './cloud-provider-spec.js';
import { IBMP_PROVIDER, IBMZ_PROVIDER } from './ibm-config.js';

export const CLOUD_PROVIDERS = {
  aws: AWS_PROVIDER,
  ibmz: IBMZ_PROVIDER,
  ibmp: IBMP_PROVIDER,
} as const;

export type ProviderType = keyof typeof CLOUD_PROVIDERS;
export const PROVIDER_TYPES = Object.keys(CLOUD_PROVIDERS) as readonly ProviderType[];

/** Each provider type's parsed config. */
export type ProviderConfigs = {
  [K in ProviderType]: (typeof CLOUD_PROVIDERS)[K] extends CloudProviderSpec<infer C> ? C : never;
};

/** A platform's provider: its type and its config of that type. */
export type DynamicProvider<Configs extends Record<ProviderType, unknown> = ProviderConfigs> = {
  [K in ProviderType]: { type: K; config: Configs[K] };
}[ProviderType];

/** The spec of a provider type, to call with a config of that type. */
export function providerSpec(type: ProviderType): CloudProviderSpec<unknown> {
  return CLOUD_PROVIDERS[type];
}

/** A Machine's providerID on a VM of this provider, as its Cluster API provider writes it. */
export function machineProviderId(
  type: ProviderType,
  id: string,
  zone: string | undefined,
): string {
  return `${CLOUD_PROVIDERS[type].providerIdPrefix}${zone ?? ''}/${id}`;
}
