// Builds the provider a cloud platform's config names, with its credentials read from the
// engine namespace for this call only. Every provider has the one CloudProvider shape.
import type { CoreV1Api } from '@kubernetes/client-node';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { awsCredentialsFromSecret } from './aws-credentials.js';
import { AwsProvider } from './aws.js';
import { readCloudSecret } from './cloud-secret.js';
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

export async function openProvider(
  deps: ProviderDeps,
  cloud: CloudPlatform,
): Promise<CloudProvider & { destroy?(): void }> {
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
    return new AwsProvider({
      configName: cloud.configName,
      config,
      credentials,
      credentialsSource: `${deps.engineNamespace}/${config.awsSecret}`,
      endpoint: deps.awsEndpoint,
    });
  }
  const secret = await readCloudSecret(deps.core, deps.engineNamespace, provider.config.secret, {
    cloud: 'IBM Cloud',
    failureType: 'IbmCredentialsMissing',
    required: [IBM_API_KEY],
    configKey: `${prefix}secret`,
  });
  const options = {
    apiKey: secret[IBM_API_KEY]!,
    keyPrefix: prefix,
    ...(deps.ibmIamEndpoint ? { iamUrl: deps.ibmIamEndpoint } : {}),
  };
  return provider.type === 'ibmz'
    ? new IbmzProvider({ ...options, config: provider.config })
    : new IbmpProvider({ ...options, config: provider.config });
}
