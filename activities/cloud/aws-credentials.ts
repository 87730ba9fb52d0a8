// Reads a platform's AWS credentials from the Secret named by `dynamic.<cfg>.aws-secret`, in the
// engine namespace, with the original's keys. The values stay in the worker: they are handed to
// the EC2 client and never returned from an activity or put in a message.
import type { CoreV1Api } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { isNotFound, rethrowKube } from '../kube-errors.js';

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

const REQUIRED = `keys ${AWS_SECRET_KEYS.accessKeyId} and ${AWS_SECRET_KEYS.secretAccessKey} (optional ${AWS_SECRET_KEYS.sessionToken})`;

/** `configKey`, e.g. `dynamic.linux-arm64.aws-secret`, is named in the errors when given. */
export async function awsCredentialsFromSecret(
  core: CoreV1Api,
  namespace: string,
  secretName: string,
  configKey?: string,
): Promise<AwsCredentials> {
  const ref = `Secret ${namespace}/${secretName}`;
  const orFix = configKey ? `, or correct ${configKey} in host-config` : '';
  let data: Record<string, string> | undefined;
  try {
    data = (await core.readNamespacedSecret({ name: secretName, namespace })).data;
  } catch (err) {
    if (isNotFound(err)) {
      throw ApplicationFailure.nonRetryable(
        `${ref} not found: create it with the AWS ${REQUIRED}${orFix}`,
        'AwsCredentialsMissing',
      );
    }
    rethrowKube(`read ${ref}`, err);
  }
  // Trimmed: a key file stored with its trailing newline would otherwise fail every signature.
  const value = (key: string) =>
    Buffer.from(data?.[key] ?? '', 'base64')
      .toString('utf8')
      .trim();
  const missing = [AWS_SECRET_KEYS.accessKeyId, AWS_SECRET_KEYS.secretAccessKey].filter(
    (key) => !value(key),
  );
  if (missing.length > 0) {
    throw ApplicationFailure.nonRetryable(
      `${ref} has no ${missing.map((key) => `key ${key}`).join(' and no ')}: it needs the AWS ${REQUIRED}${orFix}`,
      'AwsCredentialsMissing',
    );
  }
  const sessionToken = value(AWS_SECRET_KEYS.sessionToken);
  return {
    accessKeyId: value(AWS_SECRET_KEYS.accessKeyId),
    secretAccessKey: value(AWS_SECRET_KEYS.secretAccessKey),
    ...(sessionToken ? { sessionToken } : {}),
  };
}
