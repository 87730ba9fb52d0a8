// Opens the IBM providers of a platform (registry.ts): ibmz and ibmp read their API key from the
// `secret` the platform names, for each call. IBM Cloud IAM tokens are kept across calls (a boot is
// checked every check-interval; exchanging the API key for a token each time would double the
// calls), per API key: a rotated key gets a new cache.
import { createHash } from 'node:crypto';
import type { IbmpConfig, IbmzConfig } from '../../platform-config/ibm-config.js';
import { readCloudSecret } from './cloud-secret.js';
import { IamTokenSource, type IbmProviderOptions } from './ibm-iam.js';
import { IbmpProvider } from './ibmp.js';
import { IbmzProvider } from './ibmz.js';
import type { CloudProvider, OpenedProvider, ProviderDeps, ProviderOpener } from './provider.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';

/** The key of the IBM API key in its Secret, as the original named it. */
export const IBM_API_KEY = 'api-key';

function ibmOpener<C extends IbmzConfig | IbmpConfig>(
  make: (options: IbmProviderOptions<C>) => CloudProvider,
): (deps: ProviderDeps) => (cloud: CloudPlatform, config: C) => Promise<OpenedProvider> {
  return (deps) => {
    const iamTokens = new Map<string, IamTokenSource>();
    return async (cloud, config) => {
      const prefix = `dynamic.${cloud.configName}.`;
      const { secret: secretName } = config;
      const secret = await readCloudSecret(deps.core, deps.engineNamespace, secretName, {
        cloud: 'IBM Cloud',
        failureType: 'IbmCredentialsMissing',
        required: [IBM_API_KEY],
        configKey: `${prefix}secret`,
      });
      const apiKey = secret[IBM_API_KEY]!;
      const cacheKey = createHash('sha256')
        .update([apiKey, secretName, prefix, deps.ibmIamEndpoint ?? ''].join('\n'))
        .digest('hex');
      let tokens = iamTokens.get(cacheKey);
      if (!tokens) {
        tokens = new IamTokenSource({
          apiKey,
          secretName,
          keyPrefix: prefix,
          ...(deps.ibmIamEndpoint ? { url: deps.ibmIamEndpoint } : {}),
        });
        iamTokens.set(cacheKey, tokens);
      }
      return make({ apiKey, keyPrefix: prefix, tokens, config });
    };
  };
}

export const openIbmz: ProviderOpener<'ibmz'> = ibmOpener(
  (options: IbmProviderOptions<IbmzConfig>) => new IbmzProvider(options),
);
export const openIbmp: ProviderOpener<'ibmp'> = ibmOpener(
  (options: IbmProviderOptions<IbmpConfig>) => new IbmpProvider(options),
);
