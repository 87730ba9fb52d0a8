// Opening one SSH connection: connect, handshake (checking the host's key) and login. What it
// is given (SshTarget) and fails with are shared by the pool (connection-pool.ts) and withSsh.
import type { ApplicationFailure } from '@temporalio/common';
import ssh2 from 'ssh2';

export interface SshTarget {
  address: string;
  /** 22 unless given. */
  port?: number;
  user: string;
  /** OpenSSH or PEM private key. Never logged, never put in a message or a map key. */
  privateKey: string;
  /** `ssh-ed25519 AAAA…`: when given, any other host key fails the handshake. */
  hostKey?: string;
  /**
   * Decides on the key the host presents (activities/ssh/host-keys.ts): undefined accepts it, an
   * ApplicationFailure refuses it, and fails the connection with it. One of this and `hostKey`
   * is required: no connection goes to an unchecked host.
   */
  checkHostKey?: HostKeyCheck;
}

/** Given the host's key blob (the wire format), undefined to accept, or why it is refused. */
export type HostKeyCheck = (key: Buffer) => Promise<ApplicationFailure | undefined>;

/** Thrown for timeouts and closes this wrapper itself decides on. */
export class SshSessionError extends Error {
  constructor(
    message: string,
    readonly kind: 'timeout' | 'closed' | 'aborted',
  ) {
    super(message);
    this.name = 'SshSessionError';
  }
}

/**
 * Connect + handshake + login. 10 s was hit by a healthy host on a loaded 2-core worker (a CI run);
 * a host that does not answer at all still fails at once (refused) or at this bound.
 */
const READY_TIMEOUT_MS = 20_000;

export const keyBlob = (publicKey: string) => Buffer.from(publicKey.split(' ')[1] ?? '', 'base64');

/** Connect, handshake and login, checking the host's key; the key it presented. */
export function connect(
  target: SshTarget,
  signal?: AbortSignal,
): Promise<{ client: ssh2.Client; hostKey: Buffer }> {
  const client = new ssh2.Client();
  let presented: Buffer | undefined;
  let refused: Error | undefined;
  let lastError: Error | undefined;
  client.on('error', (err) => (lastError = err));
  const onAbort = () => {
    lastError ??= new SshSessionError('cancelled', 'aborted');
    client.destroy();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  return new Promise<{ client: ssh2.Client; hostKey: Buffer }>((resolve, reject) => {
    const fail = (err: Error) => {
      client.destroy();
      reject(refused ?? err);
    };
    client.once('ready', () => {
      client.off('error', fail);
      client.off('close', onClose);
      resolve({ client, hostKey: presented! });
    });
    const onClose = () => fail(lastError ?? new SshSessionError('closed', 'closed'));
    client.once('error', fail);
    client.once('close', onClose);
    const expected = target.hostKey ? keyBlob(target.hostKey) : undefined;
    const check = target.checkHostKey;
    // the check's refusal (or its own failure) is what the connection fails with, not ssh2's
    // generic "verification failed"
    const hostVerifier = (key: Buffer, verify: (ok: boolean) => void) => {
      presented = key;
      if (expected) {
        verify(key.equals(expected));
        return;
      }
      check!(key).then(
        (refusal) => {
          refused = refusal;
          verify(!refusal);
        },
        (err: unknown) => {
          refused = err instanceof Error ? err : new Error(String(err));
          verify(false);
        },
      );
    };
    try {
      client.connect({
        host: target.address,
        port: target.port ?? 22,
        username: target.user,
        privateKey: target.privateKey,
        readyTimeout: READY_TIMEOUT_MS,
        keepaliveInterval: 5_000,
        keepaliveCountMax: 3,
        hostVerifier,
      });
    } catch (err) {
      // an unparsable key throws here, synchronously
      fail(err as Error);
    }
  }).finally(() => signal?.removeEventListener('abort', onAbort));
}
