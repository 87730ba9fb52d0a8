// A platform's AWS credentials, from the Secret named by `dynamic.<cfg>.aws-secret` in the engine
// namespace, with the original's keys.
import type { CoreV1Api } from '@kubernetes/client-node';
import { readCloudSecret } from './cloud-secret.js';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export const AWS_SECRET_KEYS = {
  accessKeyId: 'access-key-id',
  secretAccessKey: 'secret-access-key',
  sessionToken: 'session-token',
} as const;

/** `configKey`, e.g. `dynamic.linux-arm64.aws-secret`, is named in the errors when given. */
export async function awsCredentialsFromSecret(
  core: CoreV1Api,
  namespace: string,
  secretName: string,
  configKey?: string,
): Promise<AwsCredentials> {
  const values = await readCloudSecret(core, namespace, secretName, {
    cloud: 'AWS',
    failureType: 'AwsCredentialsMissing',
    required: [AWS_SECRET_KEYS.accessKeyId, AWS_SECRET_KEYS.secretAccessKey],
    optional: [AWS_SECRET_KEYS.sessionToken],
    configKey,
  });
  const sessionToken = values[AWS_SECRET_KEYS.sessionToken];
  return {
    accessKeyId: values[AWS_SECRET_KEYS.accessKeyId]!,
    secretAccessKey: values[AWS_SECRET_KEYS.secretAccessKey]!,
    ...(sessionToken ? { sessionToken } : {}),
  };
}
