// Reused SSH connections (issue 27). A handshake costs ~10 ms of CPU and a few round trips; a
// burst of short commands paid it on every call (32 calls of `true` over 4 hosts: 448 ms p50
// with a connection each, 33 ms over one open connection per host). So connections are pooled:
//
// - Per (address, port, user, admin key digest, pinned host key or "checked"): up to
//   MAX_CONNECTIONS_PER_HOST connections, opened lazily, each carrying up to
//   MAX_CHANNELS_PER_CONNECTION channels (sshd's MaxSessions). A caller waits for a connection
//   being opened rather than opening another, and queues when all are full.
// - The admin key is in the pool key (as a digest, never the key): a rotated key gets new
//   connections. A pinned host key is too; a host-key check (activities/ssh/host-keys.ts) is run
//   again on every checkout against the key the connection saw at its handshake, and a refused
//   connection is dropped (the caller goes on to another or a fresh one, which checks for itself).
// - A connection that closes, errors or misses its keepalives leaves the pool; one idle for
//   IDLE_CLOSE_MS is closed (timer unref'd), and closeSshConnections() closes all at shutdown.
// - Whether a failure is the host's is decided by the caller (session.ts): a `reused` lease's
//   dead connection is retried once on a fresh one; a fresh connection's failure is the host's.
import { createHash } from 'node:crypto';
import type ssh2 from 'ssh2';
import { connect, keyBlob, SshSessionError, type SshTarget } from './connect.js';

/** More would mostly queue on the host's CPU; few enough not to look like a flood to sshd. */
export const MAX_CONNECTIONS_PER_HOST = 4;
/** sshd's default MaxSessions: channels beyond it are refused ("open failed"). */
export const MAX_CHANNELS_PER_CONNECTION = 10;
/** Long enough to carry a burst's calls, short enough that nothing lingers after it. */
export const IDLE_CLOSE_MS = 30_000;

interface Connection {
  client: ssh2.Client;
  /** The key the host presented at the handshake, re-checked on every checkout. */
  hostKey: Buffer;
  channels: number;
  /** Lowered when the host refuses a channel below MAX_CHANNELS_PER_CONNECTION; restored as they close. */
  capacity: number;
  /** Closed, failed, or taken out of the pool: no new channels. */
  dead: boolean;
  error?: Error;
  idle?: NodeJS.Timeout;
}

/** One checked-out channel slot on a connection; release() exactly once. */
export interface Lease {
  readonly client: ssh2.Client;
  /** Taken from the pool (a failure to use it says nothing about the host), or opened for it. */
  readonly reused: boolean;
  /** Why the connection ended, once it has. */
  error(): Error | undefined;
  dead(): boolean;
  /**
   * The host refused a channel on a live connection: take no more than it carries now (at least
   * one; each channel closed gives one back).
   */
  full(): void;
  release(): void;
}

class HostConnections {
  readonly open: Connection[] = [];
  connecting = 0;
  /** Callers waiting for a connection being opened to carry them. */
  claims = 0;
  private wakers: Array<() => void> = [];

  notify(): void {
    const wakers = this.wakers;
    this.wakers = [];
    for (const wake of wakers) wake();
  }

  /** Resolves at the next change (a slot freed, a connection opened or gone). */
  changed(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.wakers = this.wakers.filter((w) => w !== wake);
        reject(new SshSessionError('cancelled', 'aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.wakers.push(wake);
    });
  }

  idle(): boolean {
    return this.open.length === 0 && this.connecting === 0 && this.wakers.length === 0;
  }
}

const pools = new Map<string, HostConnections>();

const digest = (data: string | Buffer) => createHash('sha256').update(data).digest('base64');

/** Digests only: map keys end up in heap snapshots and debuggers. */
function poolKey(t: SshTarget): string {
  const hostKey = t.hostKey ? digest(keyBlob(t.hostKey)) : 'checked';
  return [t.address, t.port ?? 22, t.user, digest(t.privateKey), hostKey].join(' ');
}

/** A ready connection to `target` for one channel: reused when one has room, else opened. */
export async function acquire(
  target: SshTarget,
  options: { signal?: AbortSignal; fresh?: boolean } = {},
): Promise<Lease> {
  const key = poolKey(target);
  const { signal } = options;
  for (;;) {
    // looked up each time round: an emptied pool leaves the map while its waiters sleep
    const host = pools.get(key) ?? new HostConnections();
    pools.set(key, host);
    if (signal?.aborted) throw new SshSessionError('cancelled', 'aborted');
    const conn = options.fresh ? undefined : host.open.find((c) => c.channels < c.capacity);
    if (conn) {
      take(conn);
      if (!(await stillTrusted(target, conn))) {
        retire(host, conn);
        release(key, host, conn, false);
        continue;
      }
      return lease(key, host, conn, true);
    }
    // a connection on its way will carry this call too: no second handshake for it
    if (!options.fresh && host.claims < host.connecting * MAX_CHANNELS_PER_CONNECTION) {
      host.claims++;
      await host.changed(signal).finally(() => host.claims--);
      continue;
    }
    // `fresh` (the one retry after a dead connection) may pass the bound: that one just left
    if (options.fresh || host.open.length + host.connecting < MAX_CONNECTIONS_PER_HOST) {
      host.connecting++;
      try {
        const opened = await connect(target, signal);
        const conn = adopt(key, host, opened);
        take(conn);
        return lease(key, host, conn, false);
      } finally {
        host.connecting--;
        host.notify();
        forget(key, host);
      }
    }
    await host.changed(signal);
  }
}

/** Drops an emptied pool from the map (unless a newer one took its place). */
function forget(key: string, host: HostConnections): void {
  if (host.idle() && pools.get(key) === host) pools.delete(key);
}

/** Whether the target's host-key check still accepts what the connection saw at its handshake. */
async function stillTrusted(target: SshTarget, conn: Connection): Promise<boolean> {
  if (!target.checkHostKey) return true; // pinned: the key is part of the pool key
  try {
    return !(await target.checkHostKey(conn.hostKey));
  } catch {
    return false;
  }
}

function take(conn: Connection): void {
  conn.channels++;
  clearTimeout(conn.idle);
  conn.idle = undefined;
}

function lease(key: string, host: HostConnections, conn: Connection, reused: boolean): Lease {
  let released = false;
  let refused = false;
  return {
    client: conn.client,
    reused,
    error: () => conn.error,
    dead: () => conn.dead,
    full: () => {
      refused = true;
      conn.capacity = Math.max(1, conn.channels - 1);
    },
    release: () => {
      if (released) return;
      released = true;
      release(key, host, conn, !refused);
    },
  };
}

/** `closedChannel`: the slot held a channel, which the host gives back (after a while). */
function release(key: string, host: HostConnections, conn: Connection, closedChannel = true): void {
  conn.channels--;
  if (closedChannel) conn.capacity = Math.min(MAX_CHANNELS_PER_CONNECTION, conn.capacity + 1);
  if (conn.channels === 0) {
    if (conn.dead) conn.client.end();
    else conn.idle = setTimeout(() => retire(host, conn, key), IDLE_CLOSE_MS).unref();
  }
  host.notify();
}

/** Takes the connection out of the pool; it is closed once its last channel is done. */
function retire(host: HostConnections, conn: Connection, key?: string): void {
  conn.dead = true;
  const at = host.open.indexOf(conn);
  if (at >= 0) host.open.splice(at, 1);
  if (conn.channels === 0) conn.client.end();
  host.notify();
  if (key) forget(key, host);
}

function adopt(
  key: string,
  host: HostConnections,
  opened: { client: ssh2.Client; hostKey: Buffer },
): Connection {
  const conn: Connection = {
    ...opened,
    channels: 0,
    capacity: MAX_CHANNELS_PER_CONNECTION,
    dead: false,
  };
  host.open.push(conn);
  // each running command listens for the connection's close
  conn.client.setMaxListeners(2 * MAX_CHANNELS_PER_CONNECTION + 10);
  // ssh2 emits 'error' at any time; without a listener it would crash the worker
  conn.client.on('error', (err) => (conn.error ??= err));
  conn.client.on('close', () => {
    clearTimeout(conn.idle);
    retire(host, conn, key);
  });
  return conn;
}

/** Closes every pooled connection (worker shutdown); calls still running on them fail. */
export function closeSshConnections(): void {
  for (const [key, host] of pools) {
    for (const conn of [...host.open]) {
      clearTimeout(conn.idle);
      retire(host, conn, key);
      conn.client.destroy();
    }
  }
}
