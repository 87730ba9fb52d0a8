// Opens the AWS provider of a platform (registry.ts): its credentials from the `aws-secret` the
// platform names, read for each call. The AWS SDK is loaded on first use: it adds about 50 MB to a
// worker that serves no AWS platform.
import { awsCredentialsFromSecret } from './aws-credentials.js';
import type { AwsProvider } from './aws.js';
import type { ProviderOpener } from './provider.js';

export const openAws: ProviderOpener<'aws'> = (deps) => async (cloud, config) => {
  const credentials = await awsCredentialsFromSecret(
    deps.core,
    deps.engineNamespace,
    config.awsSecret,
    `dynamic.${cloud.configName}.aws-secret`,
  );
  const { AwsProvider: Provider } = await loadAws();
  return new Provider({
    configName: cloud.configName,
    config,
    credentials,
    credentialsSource: `${deps.engineNamespace}/${config.awsSecret}`,
    endpoint: deps.awsEndpoint,
  });
};

let aws: Promise<{ AwsProvider: typeof AwsProvider }> | undefined;
const loadAws = () => (aws ??= import('./aws.js'));
