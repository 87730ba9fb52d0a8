// Build users on static hosts, against real sshd hosts: provisioning, login as the build user,
// sudo rules, removal, injection attempts, error classification, and the admin key from Kubernetes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import {
  BUILD_USER_PATTERN,
  buildUserName,
  checkPublicKey,
  generateBuildUserKey,
  legacyBuildUserName,
  shellQuote,
} from '../activities/ssh/build-user-names.js';
import { createAdminKeyReader } from '../activities/kubernetes/admin-keys.js';
import { createHostKeys } from '../activities/ssh/host-keys.js';
import { classifySshError, withSsh } from '../activities/ssh/session.js';
import {
  createSshActivities,
  listBuildUsers,
  provisionBuildUser,
  removeBuildUser,
  type BuildUserInput,
  type SshDeps,
} from '../activities/ssh/build-users.js';
import { startSshHosts, type SshHost, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { kube, testEnv, uniqueSuffix } from './support/env.js';

/** Expects `promise` to fail with an ApplicationFailure and returns it. */
async function failure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

/** Zombies count as dead: they hold nothing, and init here reaps them only now and then. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Polls a condition of the real system (no fixed sleeps). */
async function until(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await condition());) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${condition}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Lines of an OpenSSH private key that carry per-key bytes (the first is a header every
 * unencrypted key shares, so it would match any key on disk).
 */
const secretLines = (privateKey: string) =>
  privateKey
    .split('\n')
    .slice(2, -2)
    .filter((line) => line.length >= 40);
const containsKey = (text: string, privateKey: string) =>
  secretLines(privateKey).some((line) => text.includes(line));

/**
 * ssh-hosts draws admin keys with ssh2's generator, 1 in 256 of which is malformed (see
 * generateBuildUserKey); such a pool is started again rather than failing the file.
 */
async function startUsablePool(count: number, stateDir: string, prefix: string) {
  for (let attempt = 1; ; attempt++) {
    const pool = await startSshHosts({ count, stateDir, prefix });
    const usable = pool.hosts.every(
      (h) => !(ssh2.utils.parseKey(h.adminPrivateKey) instanceof Error),
    );
    if (usable || attempt === 3) return pool;
    await pool.stop();
  }
}

describe('ssh2 key generation as used for build users', () => {
  it('never hands out a malformed ed25519 pair', () => {
    for (let i = 0; i < 2000; i++) {
      const { privateKey, publicKey } = generateBuildUserKey('u-0123456789ab');
      expect(ssh2.utils.parseKey(privateKey)).not.toBeInstanceOf(Error);
      expect(ssh2.utils.parseKey(publicKey)).not.toBeInstanceOf(Error);
      expect(publicKey).toMatch(
        /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]{43} u-0123456789ab@hostflow$/,
      );
    }
  });
});

describe('build users on static hosts over SSH', () => {
  const stateDir = join(testEnv('stateDir'), `ssh-provisioning-${process.pid}`);
  let pool: SshHostPool;
  let h1: SshHost;
  let h2: SshHost;
  const keyReads: string[] = [];
  /** The admin key straight from the pool; the Kubernetes reader has its own test below. */
  /** Where host keys trusted on first use are recorded (as in an engine namespace). */
  const keyStoreNamespace = `hostkeys-${uniqueSuffix()}`;
  const deps: SshDeps = {
    adminKey: async (secret) => {
      keyReads.push(secret);
      const host = pool.hosts.find((h) => h.name === secret);
      if (!host) throw new Error(`no host ${secret}`);
      return host.adminPrivateKey;
    },
    hostKeys: createHostKeys({ core: kube().core, engineNamespace: keyStoreNamespace }),
  };
  const activities = createSshActivities(deps);
  const hostConfig = (
    h: SshHost,
    extra: Partial<BuildUserInput['host']> = {},
  ): BuildUserInput['host'] => ({
    name: h.name,
    address: h.address,
    port: h.port,
    user: h.adminUser,
    secret: h.name,
    hostKey: h.hostPublicKey,
    ...extra,
  });
  const taskRun = () => ({
    taskRun: { namespace: `ns-${uniqueSuffix()}`, name: `tr-${uniqueSuffix()}`, uid: randomUUID() },
  });
  const login = (h: SshHost, user: string, privateKey: string, command: string) =>
    withSsh({ address: h.address, user, privateKey, hostKey: h.hostPublicKey }, (s) =>
      s.exec(command),
    );
  const onHost = async (h: SshHost, ...cmd: string[]) => (await h.exec(cmd)).stdout.trim();
  const exists = async (h: SshHost, path: string) =>
    (await h.exec(['test', '-e', path])).code === 0;

  beforeAll(async () => {
    await kube().core.createNamespace({ body: { metadata: { name: keyStoreNamespace } } });
    pool = await startUsablePool(2, stateDir, `hfs${process.pid}`);
    [h1, h2] = pool.hosts as [SshHost, SshHost];
  }, 60_000);

  afterAll(async () => {
    await pool?.stop();
    await kube()
      .core.deleteNamespace({ name: keyStoreNamespace })
      .catch(() => undefined);
  });

  it('creates the user on one host only; it logs in with the returned key and builds there', async () => {
    const tr = taskRun();
    const t0 = Date.now();
    const { user, userDir, privateKey } = await provisionBuildUser(deps, {
      host: hostConfig(h1),
      ...tr,
    });
    const provisionMs = Date.now() - t0;
    expect(user).toBe(buildUserName(tr.taskRun));
    expect(userDir).toBe(`/home/${user}/build`);
    expect(privateKey).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----\n/);

    const r = await login(
      h1,
      user,
      privateKey,
      'whoami; pwd; cd build && echo ok > out && cat out',
    );
    expect(r).toEqual({ code: 0, stdout: `${user}\n/home/${user}\nok\n`, stderr: '' });
    expect(await onHost(h1, 'stat', '-c', '%U %a', `/home/${user}`, userDir)).toBe(
      `${user} 700\n${user} 700`,
    );
    const ssh = `/home/${user}/.ssh`;
    expect(await onHost(h1, 'stat', '-c', '%U %a', ssh, `${ssh}/authorized_keys`)).toBe(
      `${user} 700\n${user} 600`,
    );
    expect(await exists(h1, `/etc/sudoers.d/${user}`)).toBe(false);

    expect((await h2.exec(['getent', 'passwd', user])).code).toBe(2);
    const elsewhere = await login(h2, user, privateKey, 'true').catch((e: unknown) => e);
    expect(classifySshError(elsewhere, { host: h2.name, address: h2.address, user }).type).toBe(
      'SshAuthRejected',
    );
    console.log(`provisioned ${user} in ${provisionMs} ms`);
  });

  it('is idempotent: a second run replaces the user, and only the new key works', async () => {
    const tr = taskRun();
    const first = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    const second = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    expect(second.user).toBe(first.user);
    expect(second.privateKey).not.toBe(first.privateKey);

    const passwd = await onHost(h1, 'grep', '-c', `^${first.user}:`, '/etc/passwd');
    expect(passwd).toBe('1');
    const keys = await onHost(h1, 'cat', `/home/${first.user}/.ssh/authorized_keys`);
    expect(keys.split('\n')).toHaveLength(1);
    const old = await login(h1, first.user, first.privateKey, 'true').catch((e: unknown) => e);
    expect((old as { level?: string }).level).toBe('client-authentication');
    expect((await login(h1, second.user, second.privateKey, 'whoami')).stdout).toBe(
      `${first.user}\n`,
    );
  });

  it('installs exactly the configured sudo commands, and removes the rule when there are none', async () => {
    const tr = taskRun();
    const sudoCommands = ['/usr/bin/podman', '/usr/bin/buildah'];
    const { user, privateKey } = await provisionBuildUser(deps, {
      host: hostConfig(h1, { sudoCommands }),
      ...tr,
    });
    const rule = `/etc/sudoers.d/${user}`;
    expect(await onHost(h1, 'stat', '-c', '%U %a', rule)).toBe('root 440');
    expect(await onHost(h1, 'cat', rule)).toBe(
      `${user} ALL=(root) NOPASSWD: /usr/bin/podman, /usr/bin/buildah`,
    );
    const listed = await login(h1, user, privateKey, 'sudo -n -l');
    expect(listed.code).toBe(0);
    const commands = listed.stdout.split(/may run the following commands on .*:\n/)[1] ?? '';
    expect(commands.trim().split('\n')).toEqual([
      '(root) NOPASSWD: /usr/bin/podman, /usr/bin/buildah',
    ]);

    const again = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    expect(await exists(h1, rule)).toBe(false);
    expect((await login(h1, user, again.privateKey, 'sudo -n -l')).code).not.toBe(0);
  });

  it("removes the user, its processes, home and sudo rule, and no other host's processes", async () => {
    const tr = taskRun();
    const host = hostConfig(h1, { sudoCommands: ['/usr/bin/podman'] });
    const { user, privateKey } = await provisionBuildUser(deps, { host, ...tr });
    const started = await login(h1, user, privateKey, 'nohup sleep 1000 >/dev/null 2>&1 & echo $!');
    const sleeper = Number(started.stdout);
    expect(alive(sleeper)).toBe(true);

    // The test hosts share one kernel: a same-numbered uid on host 2 is someone else's.
    const uid = await onHost(h1, 'id', '-u', user);
    await h2.exec(['useradd', '-M', '-u', uid, '-p', '*', 'bystander']);
    const bg = 'runuser -u bystander -- sleep 1000 </dev/null >/dev/null 2>&1 & echo $!';
    const bystander = Number(await onHost(h2, 'sh', '-c', bg));
    expect(alive(bystander)).toBe(true);

    // …and a build still logged in when its TaskRun goes away
    const session = login(h1, user, privateKey, 'exec sleep 1001');
    await until(async () => (await h1.exec(['pgrep', '-u', uid, '-xf', 'sleep 1001'])).code === 0);

    const t0 = Date.now();
    expect(await activities.removeBuildUser({ host, ...tr })).toBe('removed');
    const removeMs = Date.now() - t0;
    // its sshd session process was the user's too: the connection drops
    await expect(session).rejects.toMatchObject({ name: 'SshSessionError', kind: 'closed' });
    expect(alive(sleeper)).toBe(false);
    expect(alive(bystander)).toBe(true);
    process.kill(bystander, 'SIGKILL');
    expect((await h1.exec(['getent', 'passwd', user])).code).toBe(2);
    expect(await exists(h1, `/home/${user}`)).toBe(false);
    expect(await exists(h1, `/etc/sudoers.d/${user}`)).toBe(false);
    const gone = await login(h1, user, privateKey, 'true').catch((e: unknown) => e);
    expect((gone as { level?: string }).level).toBe('client-authentication');

    expect(await activities.removeBuildUser({ host, ...tr })).toBe('absent');
    console.log(`removed ${user} (with a running process) in ${removeMs} ms`);
  });

  it('never reuses a stale user: its processes, files and home go, and a fresh user is made', async () => {
    const tr = taskRun();
    const first = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    const firstUid = await onHost(h1, 'id', '-u', first.user);
    const sleeper = Number(
      (await login(h1, first.user, first.privateKey, 'nohup sleep 1002 >/dev/null 2>&1 & echo $!'))
        .stdout,
    );
    await login(h1, first.user, first.privateKey, 'echo left > ~/left-behind; echo t > /tmp/mine');
    const second = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    expect(second.user).toBe(first.user);
    expect(alive(sleeper)).toBe(false);
    expect(await exists(h1, `/home/${first.user}/left-behind`)).toBe(false);
    expect(await onHost(h1, 'stat', '-c', '%U', `/home/${first.user}`)).toBe(first.user);
    expect((await login(h1, second.user, second.privateKey, 'whoami')).stdout).toBe(
      `${second.user}\n`,
    );
    // The stale user's uid stays taken until its files in /tmp are gone (the next removal on the
    // host deletes them, outside the host lock): the fresh user never owns them.
    expect(await onHost(h1, 'id', '-u', second.user)).not.toBe(firstUid);
    expect(await onHost(h1, 'stat', '-c', '%U', '/tmp/mine')).toBe(`hf-retired-${firstUid}`);
    expect(await activities.removeBuildUser({ host: hostConfig(h1), ...tr })).toBe('removed');
    expect(await exists(h1, '/tmp/mine')).toBe(false);
    expect((await h1.exec(['getent', 'passwd', `hf-retired-${firstUid}`])).code).toBe(2);
  });

  it('never writes through a link planted in a stale home: another account stays untouched', async () => {
    const tr = taskRun();
    const stale = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    // What a hostile earlier build could leave behind: its ~/.ssh pointing at the admin's, and
    // its build directory pointing at /etc.
    const adminSsh = `/home/${h1.adminUser}/.ssh`;
    const adminKeys = await onHost(h1, 'cat', `${adminSsh}/authorized_keys`);
    const home = `/home/${stale.user}`;
    await h1.exec(['rm', '-rf', `${home}/.ssh`, `${home}/build`]);
    await h1.exec(['ln', '-s', adminSsh, `${home}/.ssh`]);
    await h1.exec(['ln', '-s', '/etc', `${home}/build`]);
    await h1.exec(['chown', '-h', `${stale.user}:${stale.user}`, `${home}/.ssh`, `${home}/build`]);

    const fresh = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    expect(await onHost(h1, 'cat', `${adminSsh}/authorized_keys`)).toBe(adminKeys);
    for (const path of [`${home}/.ssh`, `${home}/build`]) {
      expect(await onHost(h1, 'stat', '-c', '%F %U', path)).toBe(`directory ${fresh.user}`);
    }
    expect(await exists(h1, '/etc/authorized_keys')).toBe(false);
    // the admin still logs in with its own key, the build user with the new one
    expect((await login(h1, h1.adminUser, h1.adminPrivateKey, 'whoami')).stdout).toBe(
      `${h1.adminUser}\n`,
    );
    expect((await login(h1, fresh.user, fresh.privateKey, 'whoami')).stdout).toBe(
      `${fresh.user}\n`,
    );
    expect(await activities.removeBuildUser({ host: hostConfig(h1), ...tr })).toBe('removed');
    expect(await onHost(h1, 'cat', `${adminSsh}/authorized_keys`)).toBe(adminKeys);
  });

  it("removes the user's files in shared temporary directories, and nobody else's", async () => {
    const tr = taskRun();
    const { user, privateKey } = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr });
    await login(
      h1,
      user,
      privateKey,
      'mkdir -p /tmp/cache/deep && echo x > /tmp/cache/deep/f && echo y > /var/tmp/y && echo z > /dev/shm/z && ln -s /etc/passwd /tmp/link',
    );
    await h1.exec(['sh', '-c', 'echo keep > /tmp/admins-file']);
    expect(await activities.removeBuildUser({ host: hostConfig(h1), ...tr })).toBe('removed');
    for (const path of ['/tmp/cache', '/var/tmp/y', '/dev/shm/z', '/tmp/link']) {
      expect(await exists(h1, path)).toBe(false);
    }
    expect(await exists(h1, '/tmp/admins-file')).toBe(true);
    expect(await exists(h1, '/etc/passwd')).toBe(true);
  });

  it('lists build users with their age, and spares a user younger than a minimum age', async () => {
    const tr = taskRun();
    const { user } = await provisionBuildUser(deps, { host: hostConfig(h2), ...tr });
    const listed = await listBuildUsers(deps, hostConfig(h2));
    const mine = listed.find((entry) => entry.user === user);
    expect(mine?.ageSeconds).toBeGreaterThanOrEqual(0);
    expect(mine!.ageSeconds!).toBeLessThan(60);
    expect(await removeBuildUser(deps, hostConfig(h2), user, { minAgeSeconds: 3600 })).toBe(
      'young',
    );
    expect(await exists(h2, `/home/${user}`)).toBe(true);
    expect(await removeBuildUser(deps, hostConfig(h2), user, { minAgeSeconds: 0 })).toBe('removed');
    expect((await listBuildUsers(deps, hostConfig(h2))).map((e) => e.user)).not.toContain(user);
  });

  it('runs as Temporal activities: inside an activity context, with its cancellation signal', async () => {
    const tr = taskRun();
    await provisionBuildUser(deps, { host: hostConfig(h2), ...tr });
    const env = new MockActivityEnvironment();
    expect(await env.run(activities.probeHost, { host: hostConfig(h2) })).toMatchObject({
      ok: true,
    });
    expect(await env.run(activities.removeBuildUser, { host: hostConfig(h2), ...tr })).toBe(
      'removed',
    );

    const cancelled = new MockActivityEnvironment();
    const removal = cancelled.run(activities.removeBuildUser, {
      host: hostConfig(h2),
      ...taskRun(),
    });
    cancelled.cancel();
    await expect(removal).rejects.toBeInstanceOf(CancelledFailure);
  });

  it('provisions and removes a user per build quickly on an idle host', async () => {
    const times: Array<[number, number]> = [];
    for (let i = 0; i < 5; i++) {
      const tr = taskRun();
      const t0 = Date.now();
      await provisionBuildUser(deps, { host: hostConfig(h2), ...tr });
      const t1 = Date.now();
      expect(await activities.removeBuildUser({ host: hostConfig(h2), ...tr })).toBe('removed');
      times.push([t1 - t0, Date.now() - t1]);
    }
    console.log(`provision/remove ms on an idle host: ${JSON.stringify(times)}`);
    expect(await onHost(h2, 'ls', '/home')).toBe(h2.adminUser);
  });

  describe('shell injection', () => {
    const pwned = '/tmp/pwned';
    const evil = ["/bin/true; touch /tmp/pwned'", '/usr/bin/x $(touch /tmp/pwned)', '/x\n/y', 'x'];

    it('rejects unsafe sudo commands and admin users before contacting the host', async () => {
      keyReads.length = 0;
      for (const command of evil) {
        const f = await failure(
          provisionBuildUser(deps, {
            host: hostConfig(h1, { sudoCommands: [command] }),
            ...taskRun(),
          }),
        );
        expect(f.nonRetryable).toBe(true);
        expect(f.type).toBe('UnsafeRemoteValue');
        expect(f.message).toContain(`ssh host ${h1.name}: `);
        expect(f.message).toContain('sudo-commands');
      }
      for (const user of ['root; id', 'root$(touch /tmp/pwned)', "a'b", 'Root', '']) {
        const host = hostConfig(h1, { user });
        const f = await failure(provisionBuildUser(deps, { host, ...taskRun() }));
        expect(f.type).toBe('UnsafeRemoteValue');
        expect(await failure(activities.removeBuildUser({ host, ...taskRun() }))).toMatchObject({
          type: 'UnsafeRemoteValue',
        });
        expect((await activities.probeHost({ host })).ok).toBe(false);
      }
      expect(keyReads).toEqual([]); // never got as far as the key, let alone the host
      expect(() => checkPublicKey('ssh-ed25519 AAAA\ntouch /tmp/pwned')).toThrow(/public key/);
      expect(await exists(h1, pwned)).toBe(false);
    });

    it('hashes hostile namespace and TaskRun names into a plain user name', async () => {
      const tr = {
        taskRun: {
          namespace: "x'; touch /tmp/pwned; '",
          name: '$(touch /tmp/pwned)`id`',
          uid: "'; id; '",
        },
      };
      const user = buildUserName(tr.taskRun);
      expect(user).toMatch(BUILD_USER_PATTERN);
      expect(buildUserName(tr.taskRun)).toBe(user); // deterministic
      expect(legacyBuildUserName(tr.taskRun.namespace, tr.taskRun.name)).toMatch(
        BUILD_USER_PATTERN,
      );
      expect((await provisionBuildUser(deps, { host: hostConfig(h1), ...tr })).user).toBe(user);
      expect(await activities.removeBuildUser({ host: hostConfig(h1), ...tr })).toBe('removed');
      expect(await exists(h1, pwned)).toBe(false);
    });

    it('quotes values so the remote login shell passes them through verbatim', async () => {
      const value = `it's $(touch ${pwned}) \`id\` "; rm -rf / #\n\\`;
      const r = await login(h1, h1.adminUser, h1.adminPrivateKey, `printf %s ${shellQuote(value)}`);
      expect(r.stdout).toBe(value);
      expect(await exists(h1, pwned)).toBe(false);
    });
  });

  describe('errors', () => {
    const at = (h: SshHost) => ({ host: h.name, address: h.address, user: h.adminUser });
    /** Logging in to `h` as its admin, checking its real host key. */
    const adminLogin = (h: SshHost) => ({
      address: h.address,
      user: h.adminUser,
      privateKey: h.adminPrivateKey,
      hostKey: h.hostPublicKey,
    });

    it('a rejected admin key is non-retryable and says which host, user and Secret', async () => {
      const wrong = generateBuildUserKey('u-000000000000').privateKey;
      const f = await failure(
        provisionBuildUser(
          { ...deps, adminKey: async () => wrong },
          { host: hostConfig(h1), ...taskRun() },
        ),
      );
      expect(f).toMatchObject({ type: 'SshAuthRejected', nonRetryable: true });
      for (const part of [h1.name, h1.address, h1.adminUser, `Secret ${h1.name}`, 'id_rsa']) {
        expect(f.message).toContain(part);
      }
      expect(containsKey(f.message, wrong)).toBe(false);
      expect(f.message).not.toMatch(/[A-Za-z0-9+/]{60,}/);
    });

    it('an unusable admin key or another host key is non-retryable', async () => {
      const garbage = { ...deps, adminKey: async () => 'not a key' };
      const f = await failure(provisionBuildUser(garbage, { host: hostConfig(h1), ...taskRun() }));
      expect(f).toMatchObject({ type: 'SshAdminKeyInvalid', nonRetryable: true });

      const impostor = hostConfig(h1, { hostKey: h2.hostPublicKey });
      const g = await failure(provisionBuildUser(deps, { host: impostor, ...taskRun() }));
      expect(g).toMatchObject({ type: 'SshHostKeyMismatch', nonRetryable: true });
      expect(g.message).toContain(h1.address);
    });

    it('an admin without passwordless sudo is non-retryable and says what to grant', async () => {
      const adminKeys = `/home/${h1.adminUser}/.ssh/authorized_keys`;
      const setup = `useradd -m -p '*' -s /bin/bash nosudo && install -d -m 700 -o nosudo /home/nosudo/.ssh && install -m 600 -o nosudo ${adminKeys} /home/nosudo/.ssh/`;
      expect((await h1.exec(['sh', '-c', setup])).code).toBe(0);
      const host = hostConfig(h1, { user: 'nosudo' });
      const f = await failure(provisionBuildUser(deps, { host, ...taskRun() }));
      expect(f).toMatchObject({ type: 'SshSudoRejected', nonRetryable: true });
      expect(f.message).toContain('give nosudo passwordless sudo');
      expect(await activities.probeHost({ host })).toMatchObject({ ok: false });
    });

    it('nothing listening is retryable, and the probe says not ok', async () => {
      // a closed port on a live host of ours: the packet never leaves the machine
      const closed = hostConfig(h1, { port: 1 });
      const f = await failure(provisionBuildUser(deps, { host: closed, ...taskRun() }));
      expect(f).toMatchObject({ type: 'SshUnavailable', nonRetryable: false });
      expect(f.message).toContain(`${h1.address}:1`);
      expect(f.message).toContain('ECONNREFUSED');
      expect(
        await failure(activities.removeBuildUser({ host: closed, ...taskRun() })),
      ).toMatchObject({ type: 'SshUnavailable', nonRetryable: false });

      const probe = await activities.probeHost({ host: closed });
      expect(probe.ok).toBe(false);
      expect(probe.detail).toContain('ECONNREFUSED');
      // Not a host of host-config (there is none here) and no key given or recorded: a cloud VM
      // launched without one, say. It is refused, never trusted on first use.
      const unknown = await activities.probeHost({ host: hostConfig(h1, { hostKey: undefined }) });
      expect(unknown.ok).toBe(false);
      expect(unknown.detail).toContain(
        `ssh host ${h1.name} (${h1.address}:22): hostflow holds no host key for it`,
      );
    });

    it('cancellation closes the command at once', async () => {
      const target = adminLogin(h1);
      const abort = new AbortController();
      const t0 = Date.now();
      const running = withSsh(target, (s) => s.exec('sleep 5'), { signal: abort.signal });
      setTimeout(() => abort.abort(), 300);
      const err = await running.catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'SshSessionError', kind: 'aborted' });
      expect(Date.now() - t0).toBeLessThan(2_000);
    });

    it('a command that outlives its timeout is retryable', async () => {
      const target = adminLogin(h1);
      const err = await withSsh(target, (s) => s.exec('sleep 5', { timeoutMs: 200 })).catch(
        (e: unknown) => e,
      );
      expect(classifySshError(err, at(h1))).toMatchObject({
        type: 'SshUnavailable',
        nonRetryable: false,
      });
    });
  });

  it('never puts a private key into logs, messages or onto the host', async () => {
    const written: string[] = [];
    const restore: Array<() => void> = [];
    for (const stream of [process.stdout, process.stderr]) {
      const original = stream.write.bind(stream);
      stream.write = ((chunk: unknown, ...rest: unknown[]) => {
        written.push(String(chunk));
        return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof stream.write;
      restore.push(() => (stream.write = original));
    }
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      const original = console[method];
      console[method] = (...args: unknown[]) => {
        written.push(args.map(String).join(' '));
        original(...args);
      };
      restore.push(() => (console[method] = original));
    }
    let privateKey: string;
    let user: string;
    const tr = taskRun();
    try {
      ({ privateKey, user } = await provisionBuildUser(deps, { host: hostConfig(h1), ...tr }));
      await provisionBuildUser(deps, { host: hostConfig(h1, { port: 1 }), ...tr }).catch(
        (e: unknown) => written.push(String(e), (e as Error).stack ?? ''),
      );
      expect(await activities.removeBuildUser({ host: hostConfig(h1), ...tr })).toBe('removed');
    } finally {
      for (const undo of restore) undo();
    }
    expect(user).toMatch(BUILD_USER_PATTERN);
    // the search itself works: it finds the admin's public key where it is installed
    const adminPub = await onHost(h1, 'cat', `/home/${h1.adminUser}/.ssh/authorized_keys`);
    const found = await h1.exec(['grep', '-rlF', '-e', adminPub.split(' ')[1] ?? '?', '/home']);
    expect(found.stdout).toContain(`/home/${h1.adminUser}/.ssh/authorized_keys\n`);
    for (const secret of [privateKey, h1.adminPrivateKey]) {
      const lines = secretLines(secret);
      expect(lines.length).toBeGreaterThanOrEqual(3);
      expect(containsKey(written.join('\n'), secret)).toBe(false);
      const patterns = lines.flatMap((line) => ['-e', line]);
      const dirs = ['/home', '/etc', '/tmp', '/root', '/var/log'];
      const onDisk = await h1.exec(['grep', '-rlF', ...patterns, ...dirs]);
      expect(onDisk.stdout).toBe('');
    }
  });
});

describe('the admin key from Kubernetes', () => {
  const k = kube();
  const namespace = `ssh-keys-${uniqueSuffix()}`;
  const stateDir = join(testEnv('stateDir'), `ssh-keys-${process.pid}`);
  let pool: SshHostPool;
  let host: SshHost;

  beforeAll(async () => {
    await k.core.createNamespace({ body: { metadata: { name: namespace } } });
    pool = await startUsablePool(1, stateDir, `hfk${process.pid}`);
    host = pool.hosts[0] as SshHost;
    const secret = (name: string, data: Record<string, string>) =>
      k.core.createNamespacedSecret({ namespace, body: { metadata: { name }, stringData: data } });
    await secret('admin', { id_rsa: host.adminPrivateKey });
    await secret('no-id-rsa', { id_ed25519: host.adminPrivateKey });
    await secret('garbage', { id_rsa: 'hello' });
  }, 60_000);

  afterAll(async () => {
    await pool?.stop();
    await k.core.deleteCollectionNamespacedSecret({ namespace }).catch(() => undefined);
    await k.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  it('reads id_rsa from the engine namespace and provisions with it', async () => {
    const adminKey = createAdminKeyReader({ core: k.core, engineNamespace: namespace });
    expect(await adminKey('admin')).toBe(host.adminPrivateKey);
    const config: BuildUserInput['host'] = {
      name: host.name,
      address: host.address,
      user: host.adminUser,
      secret: 'admin',
      hostKey: host.hostPublicKey,
    };
    const tr = { taskRun: { namespace: 'team-a', name: 'build-arm64', uid: randomUUID() } };
    const hostKeys = createHostKeys({ core: k.core, engineNamespace: namespace });
    const { user, privateKey } = await provisionBuildUser(
      { adminKey, hostKeys },
      { host: config, ...tr },
    );
    const r = await withSsh(
      { address: host.address, user, privateKey, hostKey: host.hostPublicKey },
      (s) => s.exec('whoami'),
    );
    expect(r.stdout).toBe(`${user}\n`);
    const ssh = createSshActivities({ adminKey, hostKeys });
    expect(await ssh.probeHost({ host: config })).toMatchObject({ ok: true });
    expect(await ssh.removeBuildUser({ host: config, ...tr })).toBe('removed');
  });

  it('a missing Secret, key or unusable key is non-retryable and names the Secret', async () => {
    const adminKey = createAdminKeyReader({ core: k.core, engineNamespace: namespace });
    const missing = await failure(adminKey('nope'));
    expect(missing).toMatchObject({ type: 'AdminKeyMissing', nonRetryable: true });
    expect(missing.message).toContain(`Secret ${namespace}/nope not found`);
    const noKey = await failure(adminKey('no-id-rsa'));
    expect(noKey).toMatchObject({ type: 'AdminKeyMissing', nonRetryable: true });
    expect(noKey.message).toContain(`Secret ${namespace}/no-id-rsa has no key id_rsa`);
    expect(containsKey(noKey.message, host.adminPrivateKey)).toBe(false);
    const garbage = await failure(adminKey('garbage'));
    expect(garbage).toMatchObject({ type: 'AdminKeyInvalid', nonRetryable: true });
    expect(garbage.message).not.toContain('hello');

    const config = { name: host.name, address: host.address, user: host.adminUser, secret: 'nope' };
    const hostKeys = createHostKeys({ core: k.core, engineNamespace: namespace });
    const probe = await createSshActivities({ adminKey, hostKeys }).probeHost({ host: config });
    expect(probe).toMatchObject({ ok: false });
    expect(probe.detail).toContain('not found');
  });
});
