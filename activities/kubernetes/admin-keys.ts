// Reads a static host's admin private key: key `id_rsa` of the Secret named by
// `host.<name>.secret`, in the engine namespace. The key stays in the worker: callers use it to
// connect and never return it from an activity.
import type { CoreV1Api } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import ssh2 from 'ssh2';
import { isNotFound, rethrowKube } from './errors.js';

export const ADMIN_KEY = 'id_rsa';

export type AdminKeyReader = (secretName: string) => Promise<string>;

export function createAdminKeyReader(deps: {
  core: CoreV1Api;
  engineNamespace: string;
}): AdminKeyReader {
  return async (secretName) => {
    const ref = `Secret ${deps.engineNamespace}/${secretName}`;
    let data: Record<string, string> | undefined;
    try {
      data = (
        await deps.core.readNamespacedSecret({ name: secretName, namespace: deps.engineNamespace })
      ).data;
    } catch (err) {
      if (isNotFound(err)) {
        throw ApplicationFailure.nonRetryable(
          `${ref} not found: create it with the host's admin private key under key ${ADMIN_KEY}, ` +
            'or correct host.<name>.secret in host-config',
          'AdminKeyMissing',
        );
      }
      rethrowKube(`read ${ref}`, err);
    }
    const encoded = data?.[ADMIN_KEY];
    if (!encoded) {
      throw ApplicationFailure.nonRetryable(
        `${ref} has no key ${ADMIN_KEY}: put the host's admin private key there`,
        'AdminKeyMissing',
      );
    }
    const key = Buffer.from(encoded, 'base64').toString('utf8');
    // Checked here so the message names the Secret; the parser's own text never carries the key.
    const parsed: unknown = ssh2.utils.parseKey(key); // an array for some OpenSSH files
    const first = (Array.isArray(parsed) ? parsed[0] : parsed) as
      ssh2.ParsedKey | Error | undefined;
    if (!first || first instanceof Error || !first.isPrivateKey()) {
      const why = first instanceof Error ? first.message : 'it holds no private key';
      throw ApplicationFailure.nonRetryable(
        `${ref} key ${ADMIN_KEY} is not a usable private key (${why}): store the host's admin key ` +
          'there unencrypted, in OpenSSH or PEM format',
        'AdminKeyInvalid',
      );
    }
    return key;
  };
}
