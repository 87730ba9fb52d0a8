// The SSH test hosts are real sshd instances, isolated from each other and from the machine.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../local-stack/netns.js';
import { startSshHosts, type SshHost, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { listens, sshCommand } from './support/ssh.js';

/** Runs one command over SSH as the host's admin, checking the host key. */
const sshExec = (host: SshHost, command: string) =>
  sshCommand(
    {
      address: host.address,
      user: host.adminUser,
      privateKey: host.adminPrivateKey,
      hostPublicKey: host.hostPublicKey,
    },
    command,
  );

/** Zombies count as dead: they hold nothing, and init here reaps them only now and then. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('SSH test hosts', () => {
  const prefix = `hft${process.pid}`;
  const stateDir = join(tmpdir(), `hostflow-ssh-test-${process.pid}`);
  let pool: SshHostPool;
  let h1: SshHost;
  let h2: SshHost;

  beforeAll(async () => {
    pool = await startSshHosts({ count: 2, stateDir, prefix });
    [h1, h2] = pool.hosts as [SshHost, SshHost];
  }, 60_000);

  afterAll(async () => {
    await pool?.stop();
  });

  it('lets the admin log in with its key and use passwordless sudo', async () => {
    const r = await sshExec(h1, 'sudo -n true && id -un');
    expect(r).toEqual({ code: 0, stdout: `${h1.adminUser}\n` });
  });

  it('keeps a user created on one host off the other host and off the machine', async () => {
    const user = `u-${process.pid}`;
    expect((await sshExec(h1, `sudo -n useradd -m ${user}`)).code).toBe(0);

    const onH1 = await h1.exec(['getent', 'passwd', user]);
    expect(onH1.code).toBe(0);
    expect(onH1.stdout).toContain(`/home/${user}`);
    expect((await h1.exec(['test', '-d', `/home/${user}`])).code).toBe(0);
    expect((await sshExec(h1, `getent passwd ${user}`)).code).toBe(0);

    expect((await h2.exec(['getent', 'passwd', user])).code).toBe(2);
    expect((await sshExec(h2, `getent passwd ${user}`)).code).toBe(2);
    expect((await run('getent', ['passwd', user])).code).toBe(2);
    expect(existsSync(`/home/${user}`)).toBe(false);
  });

  it("gives a user on each host a uid and subordinate ids that are no other host's", async () => {
    // One kernel under every host: a shared number would let one host's clean-up take another's
    // processes for its own user's.
    const user = `ids-${process.pid}`;
    const ids = async (host: SshHost) => {
      expect((await sshExec(host, `sudo -n useradd ${user}`)).code).toBe(0);
      const uid = Number((await host.exec(['id', '-u', user])).stdout);
      const line = (await host.exec(['grep', `^${user}:`, '/etc/subuid'])).stdout.trim();
      const [, first, count] = line.split(':').map(Number);
      return { uid, first: first!, last: first! + count! - 1 };
    };
    const [a, b] = [await ids(h1), await ids(h2)];
    expect(a.uid).not.toBe(b.uid);
    expect(a.last < b.first || b.last < a.first).toBe(true);
    for (const { uid, first, last } of [a, b]) expect(uid < first || uid > last).toBe(true);
  });

  it("keeps each host's build-user state and lock (/var/lib/hostflow) its own", async () => {
    // Shared, one host's provisioning lock would hold up every other host's.
    const marker = `/var/lib/hostflow/probe-${process.pid}`;
    expect((await sshExec(h1, `sudo -n touch ${marker}`)).code).toBe(0);
    expect((await h1.exec(['test', '-e', marker])).code).toBe(0);
    expect((await h2.exec(['test', '-e', marker])).code).toBe(1);
    expect(existsSync(marker)).toBe(false);
  });

  it('gives each host its own address, where only its own sshd listens', async () => {
    expect(h1.address).not.toBe(h2.address);
    expect(h1.address).toMatch(/^10\.231\./);
    expect(h1.name).not.toBe(h2.name);
    for (const [host, other] of [
      [h1, h2],
      [h2, h1],
    ] as const) {
      const sockets = await host.exec(['ss', '-Htln']);
      expect(sockets.stdout).toContain(`${host.address}:22`);
      expect(sockets.stdout).not.toContain(`${other.address}:22`);
      expect(sockets.stdout).not.toMatch(/(0\.0\.0\.0|\*|\[::\]):22\b/);
      expect((await host.exec(['hostname'])).stdout.trim()).toBe(host.name);
    }
    expect(await listens(h1.address)).toBe(true);
    expect(await listens(h2.address)).toBe(true);
  });

  it('leaves nothing behind when stopped', async () => {
    const pids = (await Promise.all([h1, h2].map((h) => run('ip', ['netns', 'pids', h.name]))))
      .flatMap((r) => r.stdout.split('\n'))
      .filter(Boolean)
      .map(Number);
    expect(pids.length).toBeGreaterThanOrEqual(2); // at least the two sshds
    await pool.stop();
    await pool.stop(); // idempotent

    const netns = await run('ip', ['netns', 'list']);
    expect(netns.stdout).not.toContain(`${prefix}-`);
    expect(pids.filter(alive)).toEqual([]);
    expect(existsSync(stateDir)).toBe(false);
  });
});
