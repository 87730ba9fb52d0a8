// SSH connection reuse (activities/ssh/connection-pool.ts) against real sshd hosts: bounded
// connections per host, timeouts that close one channel only, a host whose sshd goes away under
// open connections, and keys (admin or host) that change under a pooled connection. Handshakes
// are counted by a TCP proxy in front of the host (every connection passes through it).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApplicationFailure } from '@temporalio/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import {
  MAX_CHANNELS_PER_CONNECTION,
  MAX_CONNECTIONS_PER_HOST,
} from '../activities/ssh/connection-pool.js';
import {
  classifySshError,
  closeSshConnections,
  withSsh,
  type SshTarget,
} from '../activities/ssh/session.js';
import { netnsPids } from '../local-stack/netns.js';
import { startSshHosts, type SshHost, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { testEnv } from './support/env.js';
import { listens } from './support/ssh.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

const run = (target: SshTarget, command: string, timeoutMs?: number, signal?: AbortSignal) =>
  withSsh(target, (s) => s.exec(command, { timeoutMs }), { signal });

/** The sshd processes of a host: its listener, and a process or two per connection. */
function sshdPids(pids: number[]): Array<{ pid: number; listener: boolean }> {
  return pids.flatMap((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      // sshd names its processes `sshd: … [listener] …`, `sshd: user [priv]`, `sshd: user@notty`
      if (!cmdline.startsWith('sshd:') && !cmdline.startsWith('/usr/sbin/sshd')) return [];
      return [{ pid, listener: cmdline.includes('[listener]') || cmdline.includes(' -D ') }];
    } catch {
      return []; // gone
    }
  });
}

describe('SSH connections reused', () => {
  const stateDir = join(testEnv('stateDir'), `ssh-reuse-${process.pid}`);
  let pool: SshHostPool;
  let h1: SshHost;
  let h2: SshHost;
  const proxies: TcpProxy[] = [];
  /** h1's admin login through a fresh proxy that counts its handshakes. */
  const proxied = async (h: SshHost) => {
    const proxy = await startTcpProxy(`${h.address}:22`);
    proxies.push(proxy);
    const [address, port] = proxy.address.split(':') as [string, string];
    const target: SshTarget = {
      address,
      port: Number(port),
      user: h.adminUser,
      privateKey: h.adminPrivateKey,
      hostKey: h.hostPublicKey,
    };
    return { proxy, target };
  };

  beforeAll(async () => {
    pool = await startSshHosts({ count: 2, stateDir, prefix: `hfr${process.pid}` });
    [h1, h2] = pool.hosts as [SshHost, SshHost];
  }, 60_000);

  afterAll(async () => {
    closeSshConnections();
    await Promise.all(proxies.map((p) => p.close()));
    await pool?.stop();
  });

  it('opens connections lazily, and many concurrent calls share a bounded few', async () => {
    const { proxy, target } = await proxied(h1);
    // a burst that one connection carries opens one connection, not one per call
    const burst = await Promise.all(Array.from({ length: 8 }, () => run(target, 'echo ok')));
    expect(burst.map((r) => r.stdout)).toEqual(Array(8).fill('ok\n'));
    expect(proxy.connections).toBe(1);

    // more calls than the pool carries at once: they queue, and all succeed
    const calls = MAX_CONNECTIONS_PER_HOST * MAX_CHANNELS_PER_CONNECTION + 10;
    const t0 = Date.now();
    const many = await Promise.all(
      Array.from({ length: calls }, () => run(target, 'sleep 0.3; echo $SSH_CONNECTION')),
    );
    const ms = Date.now() - t0;
    expect(many.every((r) => r.code === 0)).toBe(true);
    const used = new Set(many.map((r) => r.stdout.split(' ')[1]));
    expect(proxy.connections).toBeLessThanOrEqual(MAX_CONNECTIONS_PER_HOST);
    expect(used.size).toBeLessThanOrEqual(MAX_CONNECTIONS_PER_HOST);
    console.log(`${calls} concurrent calls: ${proxy.connections} connections, ${ms} ms`);
  });

  it('a timed-out or cancelled command closes its channel only: the connection goes on', async () => {
    const { proxy, target } = await proxied(h1);
    await run(target, 'true');
    const abort = new AbortController();
    const t0 = Date.now();
    const timedOut = run(target, 'sleep 5', 300).catch((e: unknown) => e);
    const cancelled = run(target, 'sleep 5', 0, abort.signal).catch((e: unknown) => e);
    const alongside = run(target, 'sleep 1; echo still here');
    setTimeout(() => abort.abort(), 300);
    expect(await timedOut).toMatchObject({ name: 'SshSessionError', kind: 'timeout' });
    expect(await cancelled).toMatchObject({ name: 'SshSessionError', kind: 'aborted' });
    expect((await alongside).stdout).toBe('still here\n');
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect((await run(target, 'echo after')).stdout).toBe('after\n');
    expect(proxy.connections).toBe(1);
  });

  it('a pooled connection found dead is replaced by a fresh one, not failed', async () => {
    const { proxy, target } = await proxied(h1);
    await run(target, 'true');
    // drops the open connection; this process hears of it only after the call below took it
    proxy.cut();
    proxy.restore();
    expect((await run(target, 'echo fresh')).stdout).toBe('fresh\n');
    expect(proxy.connections).toBe(2);
  });

  it("keeps serving over open connections when sshd's listener dies; then fails as the host's failure", async () => {
    const target: SshTarget = {
      address: h2.address,
      user: h2.adminUser,
      privateKey: h2.adminPrivateKey,
      hostKey: h2.hostPublicKey,
    };
    const warm = await Promise.all(Array.from({ length: 4 }, () => run(target, 'echo warm')));
    expect(warm.every((r) => r.code === 0)).toBe(true);
    const before = sshdPids(await netnsPids(h2.name));
    const listener = before.filter((p) => p.listener);
    expect(listener).toHaveLength(1);
    process.kill(listener[0]!.pid, 'SIGKILL');
    // the kill lands a moment later: poll
    for (const deadline = Date.now() + 5_000; await listens(h2.address, 1_000);) {
      if (Date.now() > deadline) throw new Error(`${h2.address}:22 still listens`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    // the connections already open do not need the listener
    for (let i = 0; i < 3; i++) expect((await run(target, 'echo on')).stdout).toBe('on\n');
    const concurrent = await Promise.all(Array.from({ length: 4 }, () => run(target, 'echo on')));
    expect(concurrent.every((r) => r.stdout === 'on\n')).toBe(true);

    // now the connections go too: the next call finds none alive and cannot open one
    for (const { pid } of sshdPids(await netnsPids(h2.name))) process.kill(pid, 'SIGKILL');
    const err = await run(target, 'echo never').catch((e: unknown) => e);
    const failure = classifySshError(err, { host: h2.name, address: h2.address, user: 'x' });
    // the host's failure, from a fresh connection: refused, not a dead pooled connection's close
    expect(failure).toMatchObject({ type: 'SshUnavailable', nonRetryable: false });
    expect(failure.message).toContain('ECONNREFUSED');
  });

  it('a changed admin key is never served by a connection made with the old one', async () => {
    const { proxy, target } = await proxied(h1);
    await run(target, 'true');
    const keys = `/home/${h1.adminUser}/.ssh/authorized_keys`;
    const original = (await h1.exec(['cat', keys])).stdout;
    const rotated = generateEd25519KeyPair('rotated');
    try {
      expect((await h1.exec(['sh', '-c', `echo '${rotated.publicKey}' > ${keys}`])).code).toBe(0);
      const withNew = { ...target, privateKey: rotated.privateKey };
      expect((await run(withNew, 'echo rotated')).stdout).toBe('rotated\n');
      expect(proxy.connections).toBe(2);
      // a key the host does not take is refused, open connections to the host or not
      const unknown = { ...target, privateKey: generateEd25519KeyPair('unknown').privateKey };
      const err = await run(unknown, 'true').catch((e: unknown) => e);
      expect(
        classifySshError(err, { host: h1.name, address: h1.address, user: 'x' }),
      ).toMatchObject({ type: 'SshAuthRejected' });
    } finally {
      await h1.exec(['sh', '-c', `printf %s '${original.trim()}\n' > ${keys}`]);
    }
  });

  it('a host-key check runs again on every reuse, and a refused connection is dropped', async () => {
    const { proxy, target } = await proxied(h1);
    const login = { ...target, hostKey: undefined };
    const accept = { ...login, checkHostKey: async () => undefined };
    await run(accept, 'true');
    await run(accept, 'true');
    expect(proxy.connections).toBe(1);
    let checked = 0;
    const refusal = ApplicationFailure.nonRetryable('not this key', 'SshHostKeyMismatch');
    const refuse = {
      ...login,
      checkHostKey: async () => {
        checked++;
        return refusal;
      },
    };
    await expect(run(refuse, 'true')).rejects.toBe(refusal);
    // checked on the pooled connection (dropped), then on the fresh one's handshake
    expect(checked).toBe(2);
    expect(proxy.connections).toBe(2);
    await run(accept, 'true');
    expect(proxy.connections).toBe(3);
  });
});
