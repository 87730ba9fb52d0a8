// The registry of cloud provider adapters (docs/extending.md, "How to add a cloud provider"): how
// each provider type of platform-config/cloud-providers.ts is opened. Keyed by those types, so a
// type without an adapter here does not compile. The adapters have the one CloudProvider shape
// (provider.ts); what the engine knows of a provider without calling it is its spec.
import { PROVIDER_TYPES, type ProviderType } from '../../platform-config/cloud-providers.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { openAws } from './aws-opener.js';
import { openIbmp, openIbmz } from './ibm-opener.js';
import type { OpenedProvider, OpenProvider, ProviderDeps, ProviderOpener } from './provider.js';

export const CLOUD_PROVIDER_OPENERS: { readonly [K in ProviderType]: ProviderOpener<K> } = {
  aws: openAws,
  ibmz: openIbmz,
  ibmp: openIbmp,
};

/** Opens the provider a cloud platform's config names, each type's opener made once from `deps`. */
export function providerOpener(
  deps: ProviderDeps,
): (cloud: CloudPlatform) => Promise<OpenedProvider> {
  const opens = new Map(PROVIDER_TYPES.map((type) => [type, CLOUD_PROVIDER_OPENERS[type](deps)]));
  return (cloud) => {
    // The opener of the platform's type takes that type's config, which the provider carries.
    const open = opens.get(cloud.provider.type) as OpenProvider<ProviderType>;
    return open(cloud, cloud.provider.config);
  };
}
