// The SSH key kubespray installs a cluster with: one per cluster, kept in Secret
// `<cluster>-ssh-key` next to its Provisioning (the original used one root key for every
// cluster), and handed to each of its hosts' admin user, idempotently, by logging in with the
// admin key named on the BareMetalHost, and taken back the same way when the host leaves the
// cluster: the key line the workflow recorded as it handed it out, since the Secret is the
// tenant's to rewrite by then. The private key never leaves the worker.
import type { CoreV1Api, CustomObjectsApi, V1Secret } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { INSTALLER_KEY_FINALIZER, installerKeySecretName } from '../../shared/bpa-api.js';
import {
  clusterOutputCheck,
  clusterOutputMetadata,
  clusterOutputNotOurs,
  provisioningOwner,
} from '../kubernetes/cluster-outputs.js';
import { setSecretFinalizer } from '../kubernetes/object-finalizers.js';
import { isConflict, isNotFound, rethrowKube, rethrowTenantWrite } from '../kubernetes/errors.js';
import { warnNotOwned } from '../kubernetes/owned-objects.js';
import type { KeyHost, ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { generateEd25519KeyPair } from './keys.js';
import type { HostKeys } from './host-keys.js';
import { withSsh } from './session.js';

/** Reads stdin's one line and appends it to authorized_keys unless it is there already. */
const AUTHORIZE =
  'umask 077 && read -r key && mkdir -p "$HOME/.ssh" && touch "$HOME/.ssh/authorized_keys" && ' +
  '{ grep -qxF "$key" "$HOME/.ssh/authorized_keys" || printf "%s\\n" "$key" >> "$HOME/.ssh/authorized_keys"; }';

/**
 * Reads stdin's one line and drops the lines of authorized_keys that are exactly it (no other
 * key, nor the same key with options); the file is rewritten whole, through a rename.
 */
const REVOKE =
  'umask 077 && read -r key && f="$HOME/.ssh/authorized_keys" && ' +
  '{ [ -f "$f" ] && grep -qxF "$key" "$f" || exit 0; } && ' +
  '{ grep -vxF "$key" "$f" || true; } > "$f.hostflow-revoke" && mv -f "$f.hostflow-revoke" "$f"';

export function createInstallerKeyActivities({
  core,
  custom,
  hostKeys,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  hostKeys: HostKeys;
}) {
  /** The Secret's value under `key`; null when the Secret itself does not exist. */
  async function secretKey(
    namespace: string,
    name: string,
    key: string,
  ): Promise<string | undefined | null> {
    try {
      const secret = await core.readNamespacedSecret({ name, namespace });
      const value = secret.data?.[key];
      return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
    } catch (err) {
      if (isNotFound(err)) return null;
      rethrowKube(`read Secret ${namespace}/${name}`, err);
    }
  }

  /** Runs `script` with the public key on stdin as each host's admin user; `what` for errors. */
  async function onEachHost(
    hosts: KeyHost[],
    publicKey: string,
    script: string,
    what: string,
  ): Promise<void> {
    for (const host of hosts) {
      const [namespace, name] = host.sshSecret.split('/') as [string, string];
      const adminKey = await secretKey(namespace, name, 'id_rsa');
      if (!adminKey) {
        throw ApplicationFailure.nonRetryable(
          adminKey === null
            ? `node ${host.label}: Secret ${host.sshSecret} does not exist: create it with the admin key of its host under id_rsa`
            : `node ${host.label}: Secret ${host.sshSecret} has no id_rsa: put the admin key of its host there`,
          'HostKeyMissing',
        );
      }
      // A BareMetalHost, known by its address: the key it was given, else first use records its
      // key, which the playbooks' known_hosts then holds it to.
      const hostKey = await hostKeys.target({
        address: host.address,
        ...(host.hostKey ? { given: host.hostKey } : {}),
      });
      const result = await withSsh(
        { address: host.address, user: host.user, privateKey: adminKey, ...hostKey },
        (session) => session.exec(script, { stdin: `${publicKey}\n` }),
      ).catch((err: unknown) => {
        // a refused host key is the host's failure, said as such: retrying cannot fix it
        if (err instanceof ApplicationFailure) throw err;
        throw ApplicationFailure.retryable(
          `node ${host.label} (${host.user}@${host.address}): cannot log in to ${what}: ${(err as Error).message}`,
          'SshConnectFailed',
        );
      });
      if (result.code !== 0) {
        throw ApplicationFailure.retryable(
          `node ${host.label}: ${what} failed: ${result.stderr.trim()}`,
          'SshCommandFailed',
        );
      }
    }
  }

  /** The Secret's public key as one authorized_keys line (what `read -r` reads of it). */
  async function publicKeyLine(namespace: string, keySecret: string): Promise<string | undefined> {
    const value = await secretKey(namespace, keySecret, 'id_rsa.pub');
    return value?.split('\n')[0]!.trim() || undefined;
  }

  return {
    /**
     * Creates the cluster's installer key once, marked as the Provisioning's; returns its
     * Secret's name. A key Secret of that name that is not this Provisioning's (another
     * Provisioning named the same cluster, or a person wrote it) is never used: the step fails.
     */
    async ensureInstallerKey(input: {
      namespace: string;
      cluster: string;
      owner: ProvisioningRef;
    }): Promise<string> {
      const { namespace, cluster } = input;
      const name = installerKeySecretName(cluster);
      const secret = { namespace, name };
      const owner = provisioningOwner(input.owner);
      let existing: V1Secret | undefined;
      try {
        existing = await core.readNamespacedSecret(secret);
      } catch (err) {
        if (!isNotFound(err)) rethrowKube(`read Secret ${namespace}/${name}`, err);
      }
      if (existing) {
        if (!(await clusterOutputCheck(custom, input.owner, cluster)(existing.metadata))) {
          await warnNotOwned(core, owner, `Secret ${namespace}/${name}`, 'replace');
          throw clusterOutputNotOurs(
            `Secret ${namespace}/${name}`,
            'hostflow will not use or replace it',
          );
        }
        if (existing.data?.['id_rsa.pub']) {
          // A key made before the finalizer was, held from now on.
          await setSecretFinalizer(core, secret, INSTALLER_KEY_FINALIZER, true);
          return name;
        }
      }
      // Never a pair ssh2 cannot read back (activities/ssh/keys.ts).
      const pair = generateEd25519KeyPair(`hostflow ${cluster}`);
      try {
        await core.createNamespacedSecret({
          namespace,
          body: {
            metadata: {
              ...clusterOutputMetadata(input.owner, cluster, name),
              finalizers: [INSTALLER_KEY_FINALIZER],
            },
            type: 'Opaque',
            stringData: { id_rsa: pair.privateKey, 'id_rsa.pub': pair.publicKey },
          },
        });
      } catch (err) {
        // Made meanwhile (a retry whose first create got through): checked on the next call.
        if (!isConflict(err)) rethrowTenantWrite(`create Secret ${namespace}/${name}`, err);
        throw ApplicationFailure.retryable(`Secret ${namespace}/${name} was created meanwhile`);
      }
      return name;
    },

    /** The installer key's authorized_keys line, which the workflow records before handing it out. */
    async installerPublicKey(input: { namespace: string; keySecret: string }): Promise<string> {
      const publicKey = await publicKeyLine(input.namespace, input.keySecret);
      if (!publicKey)
        throw ApplicationFailure.retryable(
          `Secret ${input.namespace}/${input.keySecret} has no id_rsa.pub yet`,
        );
      return publicKey;
    },

    /**
     * Authorizes the installer key for each host's admin user: `publicKey`, the line the workflow
     * recorded; without it (runs from before that record), the key Secret's.
     */
    async authorizeInstallerKey(input: {
      namespace: string;
      keySecret: string;
      hosts: KeyHost[];
      publicKey?: string;
    }): Promise<void> {
      const publicKey =
        input.publicKey ??
        (await secretKey(input.namespace, input.keySecret, 'id_rsa.pub'))?.trim();
      if (!publicKey)
        throw ApplicationFailure.retryable(
          `Secret ${input.namespace}/${input.keySecret} has no id_rsa.pub yet`,
        );
      await onEachHost(input.hosts, publicKey, AUTHORIZE, 'hand out the installer key');
    },

    /**
     * Takes the installer key back from each host's admin user: the host leaves the cluster, and
     * the next cluster's owner must not find this one's key there. Idempotent. `publicKeys`: the
     * lines the workflow recorded handing out, whatever the key Secret says now. Without them
     * (runs from before that record), the Secret's key; a Secret that is gone, nothing.
     */
    async revokeInstallerKey(input: {
      namespace: string;
      keySecret: string;
      hosts: KeyHost[];
      publicKeys?: string[];
    }): Promise<void> {
      if (input.hosts.length === 0) return;
      const publicKeys = input.publicKeys ?? [
        (await secretKey(input.namespace, input.keySecret, 'id_rsa.pub'))?.trim(),
      ];
      for (const publicKey of publicKeys) {
        if (publicKey)
          await onEachHost(input.hosts, publicKey, REVOKE, 'take back the installer key');
      }
    },
  };
}

export type InstallerKeyActivities = ReturnType<typeof createInstallerKeyActivities>;
