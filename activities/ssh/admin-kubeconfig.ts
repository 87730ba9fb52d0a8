// A cluster's admin kubeconfig, read from its first control plane over the engine's own SSH (the
// node's checked key, the cluster's installer key), where kubeadm writes it: nothing a runner Job
// wrote is read back. The node is the tenant's, so what comes back is held to a size and to the
// shape of a kubeconfig before it is stored.
import { ApplicationFailure } from '@temporalio/common';
import { parse } from 'yaml';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import type { HostKeys } from './host-keys.js';
import { classifySshError, withSsh } from './session.js';

export const ADMIN_CONF = '/etc/kubernetes/admin.conf';
/** A kubeconfig with embedded certificates is a few KiB. */
export const MAX_KUBECONFIG_BYTES = 256 << 10;
/** `test -e` said no: the run did not write one (reset, a run without a control plane). */
const ABSENT = 3;

export interface KubeconfigFetch {
  namespace: string;
  address: string;
  user: string;
  sshKeySecret: string;
  hostKeys?: Record<string, GivenHostKey>;
}

export function createKubeconfigFetcher(deps: {
  hostKeys: HostKeys;
  readKey(namespace: string, secretName: string): Promise<string>;
}) {
  return async (input: KubeconfigFetch): Promise<string | undefined> => {
    const { address, user } = input;
    const given = input.hostKeys?.[address];
    const hostKey = await deps.hostKeys.target({ address, ...(given ? { given } : {}) });
    const privateKey = await deps.readKey(input.namespace, input.sshKeySecret);
    const sudo = user === 'root' ? '' : 'sudo -n ';
    const command =
      `${sudo}test -e ${ADMIN_CONF} || exit ${ABSENT}; ` +
      `${sudo}head -c ${MAX_KUBECONFIG_BYTES + 1} ${ADMIN_CONF}`;
    const result = await withSsh({ address, user, privateKey, ...hostKey }, (ssh) =>
      ssh.exec(command),
    ).catch((err: unknown) => {
      throw classifySshError(err, { host: address, address, user });
    });
    if (result.code === ABSENT) return undefined;
    const where = `${ADMIN_CONF} on ${address}`;
    if (result.code !== 0) {
      throw ApplicationFailure.retryable(
        `cannot read ${where} (exit ${result.code}): ${result.stderr.trim().slice(0, 300)}`,
        'KubeconfigUnreadable',
      );
    }
    if (Buffer.byteLength(result.stdout) > MAX_KUBECONFIG_BYTES) {
      throw ApplicationFailure.nonRetryable(
        `${where} is larger than ${MAX_KUBECONFIG_BYTES} bytes: not a kubeconfig`,
        'KubeconfigInvalid',
      );
    }
    let doc: unknown;
    try {
      doc = parse(result.stdout, { maxAliasCount: 10 });
    } catch (err) {
      throw ApplicationFailure.nonRetryable(
        `${where} is not YAML: ${(err as Error).message.split('\n')[0]}`,
        'KubeconfigInvalid',
      );
    }
    const config = doc as { kind?: unknown; clusters?: unknown; users?: unknown };
    if (
      config?.kind !== 'Config' ||
      !Array.isArray(config.clusters) ||
      !Array.isArray(config.users) ||
      !config.clusters.length
    ) {
      throw ApplicationFailure.nonRetryable(
        `${where} is not a kubeconfig (kind Config with clusters and users)`,
        'KubeconfigInvalid',
      );
    }
    return result.stdout;
  };
}
