// The SSH key kubespray installs a cluster with: one per cluster, kept in Secret
// `<cluster>-ssh-key` next to its Provisioning (the original used one root key for every
// cluster), and handed to each of its hosts' admin user, idempotently, by logging in with the
// admin key named on the BareMetalHost. The private key never leaves the worker.
import type { CoreV1Api } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import {
  CLUSTER_LABEL,
  INSTALLER_KEY_FINALIZER,
  installerKeySecretName,
} from '../../shared/bpa-api.js';
import { setSecretFinalizer } from '../kubernetes/custom-finalizer.js';
import { isConflict, isNotFound, rethrowKube } from '../kubernetes/errors.js';
import { generateEd25519KeyPair } from './keys.js';
import type { HostKeys } from './host-keys.js';
import { withSsh } from './session.js';

export interface KeyHost {
  label: string;
  address: string;
  user: string;
  /** `<namespace>/<name>` of the Secret with the admin's key (id_rsa). */
  sshSecret: string;
}

/** Reads stdin's one line and appends it to authorized_keys unless it is there already. */
const AUTHORIZE =
  'umask 077 && read -r key && mkdir -p "$HOME/.ssh" && touch "$HOME/.ssh/authorized_keys" && ' +
  '{ grep -qxF "$key" "$HOME/.ssh/authorized_keys" || printf "%s\\n" "$key" >> "$HOME/.ssh/authorized_keys"; }';

export function createInstallerKeyActivities({
  core,
  hostKeys,
}: {
  core: CoreV1Api;
  hostKeys: HostKeys;
}) {
  async function secretKey(
    namespace: string,
    name: string,
    key: string,
  ): Promise<string | undefined> {
    try {
      const secret = await core.readNamespacedSecret({ name, namespace });
      const value = secret.data?.[key];
      return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      rethrowKube(`read Secret ${namespace}/${name}`, err);
    }
  }

  return {
    /** Creates the cluster's installer key once; returns its Secret's name. */
    async ensureInstallerKey(input: { namespace: string; cluster: string }): Promise<string> {
      const name = installerKeySecretName(input.cluster);
      if (await secretKey(input.namespace, name, 'id_rsa.pub')) {
        // A key made before the finalizer was, held from now on.
        const secret = { namespace: input.namespace, name };
        await setSecretFinalizer(core, secret, INSTALLER_KEY_FINALIZER, true);
        return name;
      }
      // Never a pair ssh2 cannot read back (activities/ssh/keys.ts).
      const pair = generateEd25519KeyPair(`hostflow ${input.cluster}`);
      try {
        await core.createNamespacedSecret({
          namespace: input.namespace,
          body: {
            metadata: {
              name,
              labels: { [CLUSTER_LABEL]: input.cluster },
              finalizers: [INSTALLER_KEY_FINALIZER],
            },
            type: 'Opaque',
            stringData: { id_rsa: pair.privateKey, 'id_rsa.pub': pair.publicKey },
          },
        });
      } catch (err) {
        if (!isConflict(err)) rethrowKube(`create Secret ${input.namespace}/${name}`, err);
      }
      return name;
    },

    /** Authorizes the installer key for each host's admin user. */
    async authorizeInstallerKey(input: {
      namespace: string;
      keySecret: string;
      hosts: KeyHost[];
    }): Promise<void> {
      const publicKey = (await secretKey(input.namespace, input.keySecret, 'id_rsa.pub'))?.trim();
      if (!publicKey)
        throw ApplicationFailure.retryable(
          `Secret ${input.namespace}/${input.keySecret} has no id_rsa.pub yet`,
        );
      for (const host of input.hosts) {
        const [namespace, name] = host.sshSecret.split('/') as [string, string];
        const adminKey = await secretKey(namespace, name, 'id_rsa');
        if (!adminKey) {
          throw ApplicationFailure.nonRetryable(
            `node ${host.label}: Secret ${host.sshSecret} has no id_rsa: put the admin key of its host there`,
            'HostKeyMissing',
          );
        }
        // A BareMetalHost, known by its address: first use records its key, which the
        // playbooks' known_hosts then holds it to.
        const hostKey = await hostKeys.target({ address: host.address });
        const result = await withSsh(
          { address: host.address, user: host.user, privateKey: adminKey, ...hostKey },
          (session) => session.exec(AUTHORIZE, { stdin: `${publicKey}\n` }),
        ).catch((err: unknown) => {
          // a refused host key is the host's failure, said as such: retrying cannot fix it
          if (err instanceof ApplicationFailure) throw err;
          throw ApplicationFailure.retryable(
            `node ${host.label} (${host.user}@${host.address}): cannot log in to hand out the installer key: ${(err as Error).message}`,
            'SshConnectFailed',
          );
        });
        if (result.code !== 0) {
          throw ApplicationFailure.retryable(
            `node ${host.label}: authorizing the installer key failed: ${result.stderr.trim()}`,
            'SshCommandFailed',
          );
        }
      }
    },
  };
}

export type InstallerKeyActivities = ReturnType<typeof createInstallerKeyActivities>;
