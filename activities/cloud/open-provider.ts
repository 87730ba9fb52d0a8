// Builds the provider a cloud platform's config names, with its credentials read from the
// engine namespace for each call. Every provider has the one CloudProvider shape. IBM Cloud IAM
// tokens are kept across calls (a boot is checked every check-interval; exchanging the API key
// for a token each time would double the calls), per API key: a rotated key gets a new cache.
import type { CoreV1Api } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { awsCredentialsFromSecret } from './aws-credentials.js';
import type { AwsProvider } from './aws.js';
import { readCloudSecret } from './cloud-secret.js';
import { IamTokenSource } from './ibm-iam.js';
import { IbmpProvider } from './ibmp.js';
import { IbmzProvider } from './ibmz.js';
import type { CloudProvider } from './provider.js';

export interface ProviderDeps {
  core: CoreV1Api;
  engineNamespace: string;
  /** EC2 endpoint override (moto in the tests and the local stack). */
  awsEndpoint?: string;
  /** IBM Cloud IAM token endpoint override (the IBM double in the tests and the local stack). */
  ibmIamEndpoint?: string;
}

/** The key of the IBM API key in its Secret, as the original named it. */
export const IBM_API_KEY = 'api-key';

export function providerOpener(
  deps: ProviderDeps,
): (cloud: CloudPlatform) => Promise<CloudProvider & { destroy?(): void }> {
  const iamTokens = new Map<string, IamTokenSource>();
  return async (cloud) => {
    const prefix = `dynamic.${cloud.configName}.`;
    const { provider } = cloud;
    if (provider.type === 'aws') {
      const config = provider.config;
      const credentials = await awsCredentialsFromSecret(
        deps.core,
        deps.engineNamespace,
        config.awsSecret,
        `${prefix}aws-secret`,
      );
      // Loaded on first use: the AWS SDK adds about 50 MB to a worker that serves no AWS platform.
      const { AwsProvider: Provider } = await loadAws();
      return new Provider({
        configName: cloud.configName,
        config,
        credentials,
        credentialsSource: `${deps.engineNamespace}/${config.awsSecret}`,
        endpoint: deps.awsEndpoint,
      });
    }
    const { secret: secretName } = provider.config;
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
    const options = { apiKey, keyPrefix: prefix, tokens };
    return provider.type === 'ibmz'
      ? new IbmzProvider({ ...options, config: provider.config })
      : new IbmpProvider({ ...options, config: provider.config });
  };
}

let aws: Promise<{ AwsProvider: typeof AwsProvider }> | undefined;
const loadAws = () => (aws ??= import('./aws.js'));
