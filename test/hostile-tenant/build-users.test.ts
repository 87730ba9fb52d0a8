// A hostile tenant's build on a static host, on the real stack (TaskRuns, allocator, OTP
// service, sshd hosts with their own IPC namespace, /var/spool and atd): whatever the build
// leaves behind when its TaskRun ends is gone, and the next build user on the host, which may
// get the same uid, finds none of it; and a build that leaves very many files does not hold up
// another build's provisioning on the same host.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { SshHost } from '../../local-stack/ssh-hosts.js';
import { waitFor } from '../../local-stack/process.js';
import { redeemSecret } from '../support/otp.js';
import { sshCommand } from '../support/ssh.js';
import { createStaticPool, type StaticPool } from '../support/static-pool.js';

let pool: StaticPool;
let host: SshHost;

beforeAll(async () => {
  pool = await createStaticPool('hostile-bu', 1);
  host = pool.hosts[0]!;
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0, concurrency: 2 }]));
});

afterAll(async () => {
  await pool?.dispose();
});

/** TaskRuns this test started: a test that fails half-way must not hold the host's slots. */
const started: string[] = [];
afterEach(async () => {
  const names = started.splice(0);
  await Promise.all(names.map((name) => pool.scope.taskRuns.complete(name).catch(() => {})));
  await Promise.all(names.map((name) => pool.scope.taskRuns.waitForSecretGone(name, 120_000)));
});

/** A TaskRun's build: its user, logged in with the key it redeemed as a build task does. */
async function startBuild(name: string) {
  const tr = await pool.scope.taskRuns.create({ name, platform: pool.platform });
  started.push(tr.name);
  const secret = await pool.scope.taskRuns.waitForSecret(tr.name, 60_000);
  const user = secret.host!.split('@')[0]!;
  const privateKey = await redeemSecret(secret);
  const run = async (command: string) => {
    const login = { address: host.address, user, privateKey, hostPublicKey: host.hostPublicKey };
    const { code, stdout } = await sshCommand(login, command);
    if (code !== 0) throw new Error(`the build's command exited ${code}: ${stdout}`);
    return stdout.trim();
  };
  return { tr, user, run };
}

const onHost = async (...cmd: string[]) => {
  const { code, stdout, stderr } = await host.exec(cmd);
  if (code !== 0) throw new Error(`${cmd.join(' ')} on ${host.name}: exit ${code}: ${stderr}`);
  return stdout.trim();
};

const MQUEUE = '/hf-left-behind';
const mqOpen = (flags: string) =>
  `python3 -c 'import ctypes, os; libc = ctypes.CDLL("libc.so.6", use_errno=True)
fd = libc.mq_open(b"${MQUEUE}", ${flags}, 0o600, None)
print(fd if fd >= 0 else os.strerror(ctypes.get_errno()))'`;

// What a build can leave behind that outlives its processes and its home. The process runs
// under a subordinate uid, in a user namespace of its own, as a rootless container does.
const LEAVE_BEHIND = `set -e
nohup unshare --map-auto --map-root-user --setuid 1 --setgid 1 sleep 4242 >/dev/null 2>&1 &
echo 'touch /tmp/at-ran' | at now + 1 hour 2>/dev/null
echo '* * * * * touch /tmp/cron-ran' | crontab -
ipcmk -M 4096 >/dev/null && ipcmk -S 1 >/dev/null && ipcmk -Q >/dev/null
${mqOpen('os.O_CREAT | os.O_RDWR')} >/dev/null
echo x >/var/tmp/x && echo y >/dev/shm/y && echo z >/run/lock/z
mkfifo /tmp/fifo && touch '/tmp/new
line' && cp /bin/true /tmp/setuid && chmod u+s /tmp/setuid && ln /tmp/setuid /tmp/hard-link
ln -s /etc/shadow /tmp/shadow`;

/** Everything of a build user's kind on the host, as root sees it ('' for none). */
async function leftovers() {
  const sysv = await onHost(
    'sh',
    '-c',
    'tail -q -n +2 /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg',
  );
  return {
    processes: await onHost('sh', '-c', "ps -eo uid=,args= | grep '[s]leep 4242' || true"),
    atJobs: await onHost('atq'),
    crontabs: await onHost('ls', '-A', '/var/spool/cron/crontabs'),
    sysvIpc: sysv,
    messageQueues: await onHost(
      'unshare',
      '--mount',
      'sh',
      '-c',
      'mount -t mqueue mqueue /mnt && ls -A /mnt',
    ),
    files: await onHost(
      'find',
      '/tmp',
      '/var/tmp',
      '/dev/shm',
      '/run/lock',
      '-mindepth',
      '1',
      '!',
      '-user',
      'root',
    ),
  };
}

describe('a hostile tenant on a static host', () => {
  it('leaves nothing behind: no process under a subordinate uid, at job, crontab, IPC object, queue or file', async () => {
    const a = await startBuild('leaves-things');
    const uidA = await a.run('id -u');
    await a.run(LEAVE_BEHIND);
    const left = await waitFor('the build to leave everything behind', async () => {
      const found = await leftovers();
      return Object.values(found).every(Boolean) ? found : undefined;
    });
    // the process runs as a subordinate uid: not the user's own
    const [processUid] = left.processes.split(/\s+/);
    expect(processUid).not.toBe(uidA);
    expect(await onHost('grep', '-c', `^${a.user}:${processUid}:`, '/etc/subuid')).toBe('1');

    await pool.scope.taskRuns.complete(a.tr.name);
    await pool.scope.taskRuns.waitForSecretGone(a.tr.name, 120_000);
    expect(await leftovers()).toEqual({
      processes: '',
      atJobs: '',
      crontabs: '',
      sysvIpc: '',
      messageQueues: '',
      files: '',
    });
    expect(await onHost('stat', '-c', '%U %a', '/etc/shadow')).toBe('root 640');
    expect(await onHost('sh', '-c', `grep -c '^hf-retired-' /etc/passwd || true`)).toBe('0');

    // The next build user on the host, with the same uid or not, sees nothing of it.
    const b = await startBuild('comes-next');
    const uidB = await b.run('id -u');
    console.log(`the first build user had uid ${uidA}, the next ${uidB}`);
    expect(await b.run('atq; crontab -l 2>/dev/null || true')).toBe('');
    expect(await b.run('tail -q -n +2 /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg')).toBe(
      '',
    );
    expect(await b.run(mqOpen('os.O_RDONLY'))).toBe('No such file or directory');
    await pool.scope.taskRuns.complete(b.tr.name);
    await pool.scope.taskRuns.waitForSecretGone(b.tr.name, 120_000);
  }, 300_000);

  it("leaves very many files in /tmp, and another build's provisioning on the host does not wait for their deletion", async () => {
    const a = await startBuild('many-files');
    await a.run('mkdir /tmp/many && cd /tmp/many && seq 200000 | xargs touch');
    await pool.scope.taskRuns.complete(a.tr.name);
    // Catch the deletion of its files in /tmp in the act and hold it there.
    const find = await waitFor(
      'the deletion of its files in /tmp to start',
      async () => {
        const { stdout } = await host.exec(['pgrep', '-f', '^find /tmp -xdev -mindepth 1 ']);
        return stdout.trim() ? Number(stdout.trim().split('\n')[0]) : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    process.kill(find, 'SIGSTOP');
    let b: Awaited<ReturnType<typeof startBuild>> | undefined;
    try {
      // Within the TaskRun's own bound: a provisioning that waited for the host lock would
      // time out (60 s) and be retried, and its Secret would not come while the deletion is held.
      b = await startBuild('provisioned-meanwhile');
      expect(await b.run('whoami')).toBe(b.user);
      expect(
        await onHost('test', '-d', '/tmp/many').then(
          () => 'held',
          () => 'gone',
        ),
      ).toBe('held');
      await pool.scope.taskRuns.complete(b.tr.name);
    } finally {
      process.kill(find, 'SIGCONT');
    }
    await pool.scope.taskRuns.waitForSecretGone(a.tr.name, 120_000);
    await pool.scope.taskRuns.waitForSecretGone(b!.tr.name, 120_000);
    expect(await onHost('find', '/tmp', '-mindepth', '1', '-maxdepth', '1')).toBe('');
    expect(await pool.buildUsers(host)).toEqual([]);
  }, 300_000);
});
