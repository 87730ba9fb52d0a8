// A small wrapper over ssh2: one channel per command on a pooled connection
// (activities/ssh/connection-pool.ts), explicit timeouts that close the channel; and the mapping
// of SSH failures onto Temporal retry semantics.
import { ApplicationFailure } from '@temporalio/common';
import { setTimeout as delay } from 'node:timers/promises';
import type ssh2 from 'ssh2';
import { SshSessionError, type SshTarget } from './connect.js';
import { acquire, type Lease } from './connection-pool.js';

export { SshSessionError, type HostKeyCheck, type SshTarget } from './connect.js';
export { closeSshConnections } from './connection-pool.js';

export interface ExecResult {
  /** The remote exit code; -1 when the command died of a signal. */
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  stdin?: string;
  /**
   * Default 60 s; the command's channel is closed when it passes (the connection and its other
   * channels go on). 0: no limit (the connection's keepalive still notices a host that went away).
   */
  timeoutMs?: number;
}

export interface SshSession {
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
}

export interface SshOptions {
  /** Closes the command's channel, failing it (an activity's cancellation signal). */
  signal?: AbortSignal;
}

const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
/** Output kept per stream: enough for any diagnostic, bounded against a runaway command. */
const MAX_OUTPUT = 1 << 20;
/**
 * Channels refused on live connections before giving up. sshd counts a session against
 * MaxSessions until it has reaped its command, a little after the channel closed, so a burst
 * meets a few; each try waits a little longer (25 ms more each, about 5 s in all).
 */
const MAX_CHANNEL_REFUSALS = 20;
const REFUSAL_BACKOFF_MS = 25;

/** The channel never opened, so nothing ran: trying it elsewhere is safe. */
class ChannelNotOpened extends Error {
  constructor(
    readonly underlying: Error,
    /** The connection was gone, rather than refusing this one channel. */
    readonly connectionDead: boolean,
  ) {
    super(underlying.message);
  }
}

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
  const { signal } = options;
  let lease = await acquire(target, { signal });
  let retriedDead = false;
  let refusals = 0;
  const session: SshSession = {
    exec: async (command, opts) => {
      for (;;) {
        try {
          return await exec(lease, command, opts, signal);
        } catch (err) {
          if (!(err instanceof ChannelNotOpened)) throw err;
          if (err.connectionDead) {
            // A pooled connection that died while idle is not the host's failure: one fresh
            // connection decides. A fresh one that died is the host's, as it always was.
            if (!lease.reused || retriedDead) throw lease.error() ?? err.underlying;
            retriedDead = true;
            lease.release();
            lease = await acquire(target, { signal, fresh: true });
          } else {
            if (++refusals > MAX_CHANNEL_REFUSALS) throw err.underlying;
            lease.full();
            lease.release();
            await delay(REFUSAL_BACKOFF_MS * refusals, undefined, { signal }).catch(() => {
              throw new SshSessionError('cancelled', 'aborted');
            });
            lease = await acquire(target, { signal });
          }
        }
      }
    },
  };
  try {
    return await fn(session);
  } finally {
    lease.release();
  }
}

function exec(
  lease: Lease,
  command: string,
  { stdin, timeoutMs = DEFAULT_EXEC_TIMEOUT_MS }: ExecOptions = {},
  signal: AbortSignal | undefined,
): Promise<ExecResult> {
  const { client } = lease;
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let code = -1;
    let stream: ssh2.ClientChannel | undefined;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      client.off('close', onClientClose);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    // Only this command's channel closes: the connection carries other calls' channels.
    const giveUp = (err: SshSessionError) => {
      settle(() => reject(err));
      stream?.close();
    };
    const timer =
      timeoutMs > 0
        ? setTimeout(
            () => giveUp(new SshSessionError(`no answer within ${timeoutMs} ms`, 'timeout')),
            timeoutMs,
          )
        : undefined;
    const onAbort = () => giveUp(new SshSessionError('cancelled', 'aborted'));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const closed = () => lease.error() ?? new SshSessionError('connection closed', 'closed');
    const onClientClose = () =>
      settle(() => reject(stream ? closed() : new ChannelNotOpened(closed(), true)));
    if (lease.dead()) return onClientClose();
    client.on('close', onClientClose);

    const opened = (err: Error | undefined, channel: ssh2.ClientChannel) => {
      if (err) {
        // ssh2 gives a `reason` when the host refused the channel on a live connection
        const refused = typeof (err as { reason?: unknown }).reason === 'number';
        const dead = lease.dead() || /^(No response from server|Not connected)$/.test(err.message);
        if (!refused && !dead) return settle(() => reject(err)); // e.g. the exec request refused
        return settle(() => reject(new ChannelNotOpened(err, dead)));
      }
      if (settled) return channel.close(); // timed out or cancelled while opening
      stream = channel;
      const append = (current: string, d: Buffer) =>
        current.length < MAX_OUTPUT ? current + d.toString('utf8') : current;
      channel.on('data', (d: Buffer) => (stdout = append(stdout, d)));
      channel.stderr.on('data', (d: Buffer) => (stderr = append(stderr, d)));
      channel.on('exit', (exitCode: number | null) => (code = exitCode ?? -1));
      channel.on('close', () => settle(() => resolve({ code, stdout, stderr })));
      channel.end(stdin);
    };
    try {
      client.exec(command, opened);
    } catch (err) {
      // "Not connected": the socket went before ssh2 told anyone
      settle(() => reject(new ChannelNotOpened(err as Error, true)));
    }
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
