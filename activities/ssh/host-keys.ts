// The one place that decides whether an SSH host is the one hostflow means (issue 24 item 2).
// Every SSH adapter asks it for its connection's host key check; none decides on its own.
//
// - A host of host-config: the key `host.<name>.host-key` gives, read live (an operator who puts
//   a reinstalled host's new key there is heard at once). Without one, the first key seen is
//   trusted and recorded (ConfigMap hostflow-host-keys, with a Warning Event), and from then on
//   only that key is accepted; with `require-host-keys: "true"` the host is refused instead.
// - A host not in host-config whose Host carries a key (Host.hostKey): that key.
// - Any other host not in host-config (a cloud VM, named by its instance id): the key recorded
//   for it, which the launch generated and recorded before the VM existed (cloud/vm-host-key.ts).
//   Without a record it is refused (HostKeyUnknown): a VM is never trusted on first use.
// - A node reached by address (a BareMetalHost, a cluster's node): the key it was given (a
//   BareMetalHost's annotation hostflow.dev/ssh-host-key), else trusted on first use.
// A refused key is a host failure (SshHostKeyMismatch, HostKeyUnknown); a bad or missing
// configured key is the host's config failure (HostKeyInvalid, HostKeyRequired); all name what
// to change.
import type { CoreV1Api } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import { HOST_CONFIG_NAME } from '../../platform-config/contract.js';
import { parseHostKey, type GivenHostKey } from '../../platform-config/host-key.js';
import { warnOnHostConfig } from '../kubernetes/events.js';
import { readHostConfig } from '../kubernetes/host-config.js';
import {
  createHostKeyStore,
  HOST_KEY_STORE_NAME,
  storeKey,
  type HostKeyStore,
} from '../kubernetes/host-key-store.js';
import { withSsh, type HostKeyCheck, type SshTarget } from './session.js';
import { GENERATED_KEY_COMMENT } from '../cloud/vm-host-key.js';

/** The comment of a record that keeps host-config's key for a host that may leave host-config. */
const CONFIGURED_KEY_COMMENT = 'hostflow-from-host-config';

export type HostIdentity =
  /** A host of host-config, or a cloud VM (`hostKey`: a key its Host carries). */
  | { host: string; address: string; port?: number; hostKey?: string }
  /** A node known by its address; `given`: the only key it is accepted with. */
  | { address: string; port?: number; given?: GivenHostKey };

/** What withSsh needs to check a host's key. */
export type HostKeyTarget = Pick<SshTarget, 'hostKey' | 'checkHostKey'>;

export interface HostKeys {
  /**
   * The check for `identity`'s connections. Throws, before any connection, when the host cannot
   * be checked: its configured key is invalid, or keys are required and it has none.
   */
  target(identity: HostIdentity): Promise<HostKeyTarget>;
  /**
   * Logs in once to `identity` with `login`, checking its key; returns the key (`<type>
   * <base64>`), for a known_hosts file that tools other than ssh2 (ansible) check against.
   */
  verifiedKey(
    identity: HostIdentity,
    login: Pick<SshTarget, 'user' | 'privateKey'>,
  ): Promise<string>;
}

/** OpenSSH's fingerprint: what `ssh-keygen -lf` prints and people compare. */
export const fingerprint = (blob: Buffer) =>
  `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;

/** `<type> <base64>` of a wire-format key blob. */
function keyLine(blob: Buffer): string {
  const length = blob.length >= 4 ? blob.readUInt32BE(0) : 0;
  return `${blob.subarray(4, 4 + length).toString('latin1')} ${blob.toString('base64')}`;
}

/** Where a cloud VM's generated key is recorded: as any host's, under its name (instance id). */
export const vmHostKeyRecord = (instanceId: string) => `host.${instanceId}`;

const recordId = (identity: HostIdentity) =>
  'host' in identity ? vmHostKeyRecord(identity.host) : `address.${identity.address}`;

const describe = (identity: HostIdentity) =>
  'host' in identity
    ? `ssh host ${identity.host} (${identity.address}:${identity.port ?? 22})`
    : `ssh host at ${identity.address}:${identity.port ?? 22}`;

export function createHostKeys(deps: {
  core: CoreV1Api;
  engineNamespace: string;
  store?: HostKeyStore;
}): HostKeys {
  const { core, engineNamespace } = deps;
  const store = deps.store ?? createHostKeyStore(deps);
  const storeRef = (id: string) =>
    `ConfigMap ${engineNamespace}/${HOST_KEY_STORE_NAME} key ${storeKey(id)}`;
  const configRef = (name: string) =>
    `host.${name}.host-key in ConfigMap ${engineNamespace}/${HOST_CONFIG_NAME}`;

  const mismatch = async (
    identity: HostIdentity,
    presented: Buffer,
    expected: string,
    from: string,
    vmFix?: string,
  ) => {
    const given = parseHostKey(expected);
    const expectedPrint = given.ok ? fingerprint(Buffer.from(given.blob)) : 'unreadable';
    const fix =
      vmFix ??
      ('host' in identity
        ? `if the host was reinstalled, put its new key in ${configRef(identity.host)}`
        : identity.given
          ? `if the host was reinstalled, put its new key in ${identity.given.from}`
          : `if the host was reinstalled, delete ${storeRef(recordId(identity))} to trust its next key`);
    const message =
      `${describe(identity)} presented host key ${fingerprint(presented)} (${keyLine(presented).split(' ')[0]}), ` +
      `not the one ${from} (${expectedPrint}); hostflow refuses to connect: ${fix}; ` +
      'otherwise find out what answers at that address';
    await warnOnHostConfig(core, engineNamespace, {
      reason: 'HostKeyMismatch',
      message,
      dedupKey: `host-key-mismatch\n${recordId(identity)}\n${fingerprint(presented)}`,
    });
    return ApplicationFailure.nonRetryable(message, 'SshHostKeyMismatch');
  };

  /** Accepts only `expected`. */
  const pinned =
    (identity: HostIdentity, expected: string, from: string, vmFix?: string): HostKeyCheck =>
    async (key) => {
      const given = parseHostKey(expected);
      if (given.ok && Buffer.from(given.blob).equals(key)) return undefined;
      return mismatch(identity, key, expected, from, vmFix);
    };

  /** The recorded key, or the presented one recorded (with a Warning) when there is none. */
  const firstUse =
    (identity: HostIdentity): HostKeyCheck =>
    async (key) => {
      const id = recordId(identity);
      const presented = keyLine(key);
      const held = await store.recordFirst(id, presented);
      if (held.recorded) {
        const hint =
          'host' in identity
            ? `put it in ${configRef(identity.host)} (and set require-host-keys: "true") so that no host is trusted unverified`
            : 'check it against the host if in doubt';
        await warnOnHostConfig(core, engineNamespace, {
          reason: 'HostKeyTrustedOnFirstUse',
          message:
            `${describe(identity)}: trusted its host key ${fingerprint(key)} on first use and ` +
            `recorded it in ${storeRef(id)}; any other key will be refused. If it is the host's, ${hint}`,
          dedupKey: `host-key-first-use\n${id}\n${fingerprint(key)}`,
        });
        return undefined;
      }
      return pinned(identity, held.key, `hostflow recorded on first use in ${storeRef(id)}`)(key);
    };

  /**
   * A configured key that a connection accepted is also recorded (once per key and worker), so
   * that a host removed from host-config while builds still run there keeps being checked
   * against it while they clean up.
   */
  const remembered = new Map<string, string>();
  async function rememberConfigured(host: string, key: string): Promise<undefined> {
    const id = vmHostKeyRecord(host);
    const record = `${key.split(/\s+/).slice(0, 2).join(' ')} ${CONFIGURED_KEY_COMMENT}`;
    if (remembered.get(id) === record) return undefined;
    await store.remember(id, record);
    remembered.set(id, record);
    return undefined;
  }

  /**
   * A host that is not in host-config: a cloud VM, or a host removed from host-config while in
   * use. Only the key recorded for it; none recorded is refused, never trusted on first use.
   */
  async function notInHostConfig(identity: HostIdentity & { host: string }) {
    const id = recordId(identity);
    const held = await store.held(id);
    if (held) {
      if (held.endsWith(` ${CONFIGURED_KEY_COMMENT}`)) {
        const from = `${configRef(identity.host)} gave before the host left host-config (${storeRef(id)})`;
        return { checkHostKey: pinned(identity, held, from) };
      }
      if (!held.endsWith(` ${GENERATED_KEY_COMMENT}`)) {
        const from = `hostflow recorded on first use in ${storeRef(id)}`;
        return { checkHostKey: pinned(identity, held, from) };
      }
      const from = `hostflow generated for this VM and gave it in its user data at launch (${storeRef(id)})`;
      const fix =
        'this is not the VM hostflow launched, or its image did not install the host key from ' +
        "the user data (cloud-init's ssh_keys); it is not used";
      return { checkHostKey: pinned(identity, held, from, fix) };
    }
    throw ApplicationFailure.nonRetryable(
      `${describe(identity)}: hostflow holds no host key for it (it is not a host of ` +
        `host-config, and ${storeRef(id)} is not set), so it cannot tell the host from an ` +
        'impostor and does not connect. A cloud VM gets its key when hostflow launches it: ' +
        'one launched without (by an older hostflow, or the record was deleted) is not used',
      'HostKeyUnknown',
    );
  }

  async function target(identity: HostIdentity): Promise<HostKeyTarget> {
    if (!('host' in identity)) {
      const { given } = identity;
      return {
        checkHostKey: given
          ? pinned(identity, given.key, `${given.from} gives`)
          : firstUse(identity),
      };
    }
    const read = await readHostConfig(core, engineNamespace);
    const config = read.found ? read.config : undefined;
    const entry = config?.staticHosts.find((h) => h.name === identity.host);
    const problem = config?.problems.find((p) => p.key === `host.${identity.host}.host-key`);
    if (problem) {
      throw ApplicationFailure.nonRetryable(
        `${describe(identity)}: host-config ${problem.key}: ${problem.reason}`,
        problem.reason.startsWith('required') ? 'HostKeyRequired' : 'HostKeyInvalid',
      );
    }
    // A host of host-config: its configured key, read now. Another: the key its Host carries.
    if (entry?.hostKey) {
      const check = pinned(identity, entry.hostKey, `${configRef(identity.host)} gives`);
      const configured = entry.hostKey;
      return {
        checkHostKey: async (key) =>
          (await check(key)) ?? (await rememberConfigured(identity.host, configured)),
      };
    }
    if (!entry && identity.hostKey) {
      return {
        checkHostKey: pinned(identity, identity.hostKey, 'hostflow was given for this host'),
      };
    }
    if (!entry) return notInHostConfig(identity);
    if (config?.requireHostKeys) {
      throw ApplicationFailure.nonRetryable(
        `${describe(identity)}: host-config requires host keys (require-host-keys: "true") and ` +
          `${configRef(identity.host)} is not set; put the host's public SSH host key there`,
        'HostKeyRequired',
      );
    }
    return { checkHostKey: firstUse(identity) };
  }

  return {
    target,
    async verifiedKey(identity, login) {
      const check = await target(identity);
      let accepted: Buffer | undefined;
      const checkHostKey: HostKeyCheck = async (key) => {
        const refusal = check.checkHostKey ? await check.checkHostKey(key) : undefined;
        if (!refusal) accepted = key;
        return refusal;
      };
      await withSsh(
        { address: identity.address, port: identity.port, ...login, checkHostKey },
        async () => undefined,
      );
      return keyLine(accepted!);
    },
  };
}
