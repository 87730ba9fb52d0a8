// A small wrapper over ssh2's Client: one connection per call, explicit timeouts, always closed;
// and the mapping of SSH failures onto Temporal retry semantics.
import { ApplicationFailure } from '@temporalio/common';
import ssh2 from 'ssh2';

export interface SshTarget {
  address: string;
  /** 22 unless given. */
  port?: number;
  user: string;
  /** OpenSSH or PEM private key. Never logged, never put in a message. */
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

export interface ExecResult {
  /** The remote exit code; -1 when the command died of a signal. */
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  stdin?: string;
  /**
   * Default 60 s; the connection is closed when it passes. 0: no limit (the connection's
   * keepalive still notices a host that went away).
   */
  timeoutMs?: number;
}

export interface SshSession {
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
}

export interface SshOptions {
  /** Closes the connection, failing what runs on it (an activity's cancellation signal). */
  signal?: AbortSignal;
}

/**
 * Connect + handshake + login. 10 s was hit by a healthy host on a loaded 2-core worker (a CI run);
 * a host that does not answer at all still fails at once (refused) or at this bound.
 */
const READY_TIMEOUT_MS = 20_000;
const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
/** Output kept per stream: enough for any diagnostic, bounded against a runaway command. */
const MAX_OUTPUT = 1 << 20;

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

const keyBlob = (publicKey: string) => Buffer.from(publicKey.split(' ')[1] ?? '', 'base64');

export async function withSsh<T>(
  target: SshTarget,
  fn: (session: SshSession) => Promise<T>,
  options: SshOptions = {},
): Promise<T> {
  if (!target.hostKey && !target.checkHostKey) {
    throw ApplicationFailure.nonRetryable(
      `ssh ${target.address}: no host key check given; every connection must verify its host`,
      'HostKeyUnchecked',
    );
  }
  const client = new ssh2.Client();
  // ssh2 emits 'error' at any time; without a listener it would crash the worker
  let lastError: Error | undefined;
  client.on('error', (err) => (lastError = err));
  const onAbort = () => {
    lastError ??= new SshSessionError('cancelled', 'aborted');
    client.destroy();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (options.signal?.aborted) throw new SshSessionError('cancelled', 'aborted');
    await new Promise<void>((resolve, reject) => {
      client.once('ready', resolve);
      let refused: Error | undefined;
      client.once('error', (err) => reject(refused ?? err));
      client.once('close', () =>
        reject(refused ?? lastError ?? new SshSessionError('closed', 'closed')),
      );
      const expected = target.hostKey ? keyBlob(target.hostKey) : undefined;
      const check = target.checkHostKey;
      // the check's refusal (or its own failure) is what the connection fails with, not ssh2's
      // generic "verification failed"
      const hostVerifier = expected
        ? (key: Buffer) => key.equals(expected)
        : (key: Buffer, verify: (ok: boolean) => void) => {
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
      // connect() throws synchronously on an unparsable key: that rejects this promise too
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
    });
    return await fn({ exec: (command, opts) => exec(client, command, opts, () => lastError) });
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    client.end();
    client.destroy();
  }
}

function exec(
  client: ssh2.Client,
  command: string,
  { stdin, timeoutMs = DEFAULT_EXEC_TIMEOUT_MS }: ExecOptions = {},
  lastError: () => Error | undefined,
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let code = -1;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      client.off('close', onClientClose);
      fn();
    };
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            settle(() =>
              reject(new SshSessionError(`no answer within ${timeoutMs} ms`, 'timeout')),
            );
            client.destroy();
          }, timeoutMs)
        : undefined;
    const onClientClose = () =>
      settle(() => reject(lastError() ?? new SshSessionError('connection closed', 'closed')));
    client.on('close', onClientClose);

    client.exec(command, (err, stream) => {
      if (err) return settle(() => reject(err));
      const append = (current: string, d: Buffer) =>
        current.length < MAX_OUTPUT ? current + d.toString('utf8') : current;
      stream.on('data', (d: Buffer) => (stdout = append(stdout, d)));
      stream.stderr.on('data', (d: Buffer) => (stderr = append(stderr, d)));
      stream.on('exit', (exitCode: number | null) => (code = exitCode ?? -1));
      stream.on('close', () => settle(() => resolve({ code, stdout, stderr })));
      stream.end(stdin);
    });
  });
}

export interface SshContext {
  /** The host's name in host-config. */
  host: string;
  address: string;
  port?: number;
  user: string;
  /** The Secret holding the admin key, for messages. */
  secret?: string;
}

const where = (c: SshContext) => `ssh host ${c.host} (${c.address}:${c.port ?? 22}) as ${c.user}`;

const secretRef = (c: SshContext) =>
  c.secret
    ? `Secret ${c.secret} (host.${c.host}.secret)`
    : `the Secret named by host.${c.host}.secret`;

/** Drops anything shaped like key material, should a library ever echo some. */
function redact(text: string): string {
  return text
    .replace(/-----BEGIN[\s\S]*?(-----END[^-]*-----|$)/g, '[redacted]')
    .replace(/[A-Za-z0-9+/=]{60,}/g, '[redacted]');
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
]);

/**
 * What retrying cannot fix (the host refuses our key, a different host answers, the admin key is
 * unusable) is non-retryable, naming the host, the user and what to change; anything about reaching
 * the host (refused, reset, unreachable, timed out) is retryable, since hosts come back.
 */
export function classifySshError(err: unknown, context: SshContext): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const e = (err ?? {}) as { message?: string; level?: string; code?: string };
  const message = redact(e.message ?? String(err));
  const at = where(context);
  if (e.level === 'client-authentication') {
    return ApplicationFailure.nonRetryable(
      `${at}: the host rejected the admin key (${message}); check that the private key in ` +
        `${secretRef(context)}, key id_rsa, matches an authorized_keys ` +
        `entry of ${context.user} on the host, and that host.${context.host}.user is right`,
      'SshAuthRejected',
    );
  }
  if (/Host denied \(verification failed\)/.test(message)) {
    return ApplicationFailure.nonRetryable(
      `${at}: the host presented an unexpected host key; if the host was reinstalled, ` +
        'update the host key hostflow expects for it, otherwise find out what answers there',
      'SshHostKeyMismatch',
    );
  }
  if (/privateKey|private key|passphrase/i.test(message) && !e.level) {
    return ApplicationFailure.nonRetryable(
      `${at}: the admin key is unusable (${message}); put an unencrypted OpenSSH or PEM private ` +
        `key in ${secretRef(context)} under key id_rsa`,
      'SshAdminKeyInvalid',
    );
  }
  if (e.level === 'handshake') {
    return ApplicationFailure.nonRetryable(
      `${at}: SSH handshake failed (${message}); the host's sshd offers no algorithm in common ` +
        'with hostflow: enable ed25519 or RSA-SHA2 host keys and a modern key exchange',
      'SshHandshakeFailed',
    );
  }
  const unavailable =
    e.level === 'client-timeout' ||
    e.level === 'client-socket' ||
    e.level === 'client-dns' ||
    e.level === 'protocol' ||
    (e.code !== undefined && UNAVAILABLE_CODES.has(e.code)) ||
    err instanceof SshSessionError;
  const hint = unavailable
    ? 'check that the host is up, that sshd listens on that port and that the network allows it; retrying'
    : 'retrying';
  return ApplicationFailure.retryable(
    `${at}: ${e.code && !message.includes(e.code) ? `${e.code} ` : ''}${message}; ${hint}`,
    'SshUnavailable',
  );
}
