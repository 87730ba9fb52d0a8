// Reads a cloud credential Secret from the engine namespace. The values stay in the worker: they
// are handed to the provider's client and never returned from an activity or put in a message.
import type { CoreV1Api } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { isNotFound, rethrowKube } from '../kubernetes/errors.js';

export interface CloudSecretSpec {
  /** e.g. "AWS", named in the errors. */
  cloud: string;
  /** The ApplicationFailure type of a missing Secret or key. */
  failureType: string;
  required: string[];
  optional?: string[];
  /** e.g. `dynamic.linux-arm64.aws-secret`, named in the errors when given. */
  configKey?: string;
}

/** The Secret's required and present optional keys, trimmed (key files end with a newline). */
export async function readCloudSecret(
  core: CoreV1Api,
  namespace: string,
  secretName: string,
  spec: CloudSecretSpec,
): Promise<Record<string, string>> {
  const ref = `Secret ${namespace}/${secretName}`;
  const orFix = spec.configKey ? `, or correct ${spec.configKey} in host-config` : '';
  const needs =
    `${spec.required.length > 1 ? 'keys' : 'key'} ${spec.required.join(' and ')}` +
    (spec.optional?.length ? ` (optional ${spec.optional.join(', ')})` : '');
  const failure = (what: string) =>
    ApplicationFailure.nonRetryable(
      `${ref} ${what} the ${spec.cloud} ${needs}${orFix}`,
      spec.failureType,
    );
  let data: Record<string, string> | undefined;
  try {
    data = (await core.readNamespacedSecret({ name: secretName, namespace })).data;
  } catch (err) {
    if (isNotFound(err)) throw failure('not found: create it with');
    rethrowKube(`read ${ref}`, err);
  }
  const value = (key: string) =>
    Buffer.from(data?.[key] ?? '', 'base64')
      .toString('utf8')
      .trim();
  const missing = spec.required.filter((key) => !value(key));
  if (missing.length > 0)
    throw failure(`has no ${missing.map((k) => `key ${k}`).join(' and no ')}: it needs`);
  const values: Record<string, string> = {};
  for (const key of [...spec.required, ...(spec.optional ?? [])]) {
    if (value(key)) values[key] = value(key);
  }
  return values;
}
