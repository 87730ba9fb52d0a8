// Real OpenSSH test hosts (docs/architecture.md, "Testing against real components"): each sshd runs in its own network namespace, at its own
// address on the hfbr0 bridge, and in its own mount namespace with a private /etc (overlayfs),
// /home, /root, /tmp, /var/tmp, /dev/shm, /run, /var/mail, /var/log and /var/spool (at and cron
// jobs), so users created on one host exist nowhere else, nor do their files; and in its own IPC
// namespace, so are their SysV IPC objects and POSIX message queues. Each runs atd, as a host does.
// The hosts share one kernel, which real hosts never do: so that no host's uid or subordinate
// uid is also another's, each gives out ids from a block of its own (ID_BLOCK, by its address
// slot). Else one host's clean-up would take another's processes, under the same number in a
// user namespace of their own, for its own user's.
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { writeFileSync } from 'node:fs';
import { sshBanner } from '../activities/ssh/banner.js';
import { join, resolve } from 'node:path';
import {
  createHostNetAt,
  createHostNets,
  destroyHostNet,
  must,
  netnsPids,
  run,
  type HostNet,
  type RunResult,
} from './netns.js';
import { REPO_ROOT } from './paths.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';

export interface SshHost {
  name: string;
  address: string;
  port: number;
  adminUser: string;
  /** OpenSSH-format private key of the admin user. */
  adminPrivateKey: string;
  /** `ssh-ed25519 AAAA…` host key, for known_hosts / host key verification. */
  hostPublicKey: string;
  /** Runs a command (no shell) as root inside the host's network and mount namespaces. */
  exec(cmd: string[]): Promise<RunResult>;
  /**
   * Gives the host a new host key, as a reinstall would (or an impostor at its address): open
   * SSH connections end, sshd reloads and presents it from then on. Updates `hostPublicKey`;
   * returns the new key.
   */
  swapHostKey(): Promise<string>;
  stop(): Promise<void>;
}

export interface SshHostPool {
  hosts: SshHost[];
  stop(): Promise<void>;
}

export interface SshHostsOptions {
  count: number;
  /** Removed and recreated at start, removed at stop. */
  stateDir: string;
  /** Names the hosts `<prefix>-1…`; unique per pool so parallel pools stay apart. */
  prefix?: string;
  adminUser?: string;
  /** Restart a host's sshd whenever it exits (`hostflow start`): a host that comes back. */
  restart?: boolean;
  /** With `restart`: how long a host takes to come back (default: back-off, as for a crash). */
  bootDelayMs?: number;
  /** One admin key for every host (a pool of nodes one Secret logs in to); default one each. */
  adminKey?: KeyPair;
  /**
   * Machines that keep their disks (`hostflow start`): the state dir stays at stop, and the next
   * start brings each host back on it, as a reboot would: its address (parked meanwhile, so no
   * other pool takes it) and MAC, its host key and admin key, its users, homes and /etc. Else the
   * hosts are new each start.
   */
  keep?: boolean;
}

const SSHD = '/usr/sbin/sshd';
/** Where a host sees its own state dir (host key, sshd_config, pid file). */
const STATE_MOUNT = 'hostflow-host';
/** Ids per host: its uids, gids and subordinate ranges all lie in [slot × ID_BLOCK, + ID_BLOCK). */
const ID_BLOCK = 65_536;
const IN_HOST = `/run/${STATE_MOUNT}`;
/**
 * The apt-get stand-in (local-stack/apt-stand-in), copied into each host's state dir: the
 * repository may live under /tmp, which hosts do not see. Set HOSTFLOW_PACKAGE_MANAGER to it.
 */
export const APT_STAND_IN_ON_HOST = `${IN_HOST}/apt-stand-in/apt-get`;
/** The host's private directories, under its state dir. */
const HOST_DIRS: Array<[string, number]> = [
  ['etc.upper', 0o755],
  ['etc.work', 0o755],
  ['var/log.upper', 0o755],
  ['var/log.work', 0o755],
  ['var/spool.upper', 0o755],
  ['var/spool.work', 0o755],
  ['home', 0o755],
  ['root', 0o700],
  ['var-lib-hostflow', 0o755],
  ['run', 0o755],
];
const TOOLS: Array<[string, string]> = [
  [SSHD, 'openssh-server'],
  ['/usr/bin/ssh-keygen', 'openssh-client'],
  ['/usr/bin/sudo', 'sudo'],
  ['/usr/bin/nsenter', 'util-linux'],
  ['/usr/bin/unshare', 'util-linux'],
  // what a build can leave behind, so that removal is tested against the real thing
  ['/usr/bin/ipcmk', 'util-linux'],
  ['/usr/bin/newuidmap', 'uidmap'],
  ['/usr/sbin/atd', 'at'],
  ['/usr/bin/crontab', 'cron'],
];

// Runs as root inside the host's network namespace, in a fresh private mount namespace: makes
// the private filesystem, the admin user, then becomes sshd. Args: state dir, name, address, admin,
// the first id of the host's block.
const BOOT = `set -eu
S=$1 NAME=$2 ADDR=$3 ADMIN=$4 IDS=$5
# The host's own /run, carrying the state dir along: mounted inside $S, then moved over /run, so
# the state dir stays reachable wherever it is (even under /tmp or /run, which get covered).
mount -n -t tmpfs -o mode=755 tmpfs "$S/run"
mkdir "$S/run/${STATE_MOUNT}" && mount -n --bind "$S" "$S/run/${STATE_MOUNT}"
mount -n --move "$S/run" /run
S=/run/${STATE_MOUNT}
# useradd/userdel replace /etc files by rename, so /etc needs a writable copy-on-write layer
for d in etc var/log var/spool; do
  mount -n -t overlay overlay -o "lowerdir=/$d,upperdir=$S/$d.upper,workdir=$S/$d.work" "/$d"
done
# Build-user state and the per-host lock (activities/ssh/build-user-scripts.ts) are the host's
# own, as on a machine of its own: shared, they would serialize every host's provisioning.
mkdir -p /var/lib/hostflow && mount -n --bind "$S/var-lib-hostflow" /var/lib/hostflow
mount -n --bind "$S/home" /home
mount -n --bind "$S/root" /root
mount -n -t tmpfs -o mode=1777 tmpfs /tmp
mount -n -t tmpfs -o mode=1777 tmpfs /var/tmp
mount -n -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -n -t tmpfs -o mode=2775 tmpfs /var/mail && chgrp mail /var/mail
mkdir -p -m 755 /run/sshd && mkdir -p -m 1777 /run/lock
hostname "$NAME"
# useradd's ids from the host's block: users from +1000, subordinate ranges of 1024 from +8192
sed -i -E '/^[[:space:]]*(UID|GID|SUB_UID|SUB_GID)_(MIN|MAX|COUNT)[[:space:]]/d' /etc/login.defs
for k in UID GID; do
  printf '%s_MIN %s\\n%s_MAX %s\\n' $k $((IDS + 1000)) $k $((IDS + 4999)) >> /etc/login.defs
done
for k in SUB_UID SUB_GID; do
  printf '%s_MIN %s\\n%s_MAX %s\\n%s_COUNT 1024\\n' $k $((IDS + 8192)) $k $((IDS + ${ID_BLOCK} - 1)) $k >> /etc/login.defs
done
# The host's at daemon, running the jobs in its own /var/spool (a restarted sshd finds it still
# there). No cron daemon: it would run the machine's system jobs once per host; crontabs are
# checked in the spool.
atd || true
grep -qx "$ADDR $NAME" /etc/hosts || echo "$ADDR $NAME" >> /etc/hosts
# A restarted host finds its /etc (the overlay) and homes as it left them, like a rebooted one:
# the admin user and key are added once, and keys added since (an installer's) stay.
if [ "$ADMIN" = root ]; then # as on IBM Cloud images: root logs in with the key
  HOME_DIR=/root
else
  # '*', not useradd's '!': sshd refuses key logins to accounts it considers locked
  id -u "$ADMIN" >/dev/null 2>&1 || useradd -m -s /bin/bash -p '*' "$ADMIN"
  HOME_DIR=/home/$ADMIN
  echo "$ADMIN ALL=(ALL) NOPASSWD:ALL" > "/etc/sudoers.d/$ADMIN" && chmod 440 "/etc/sudoers.d/$ADMIN"
fi
install -d -m 700 -o "$ADMIN" -g "$ADMIN" "$HOME_DIR/.ssh"
AK=$HOME_DIR/.ssh/authorized_keys
touch "$AK" && chown "$ADMIN:$ADMIN" "$AK" && chmod 600 "$AK"
grep -qxF -f "$S/admin.pub" "$AK" || cat "$S/admin.pub" >> "$AK"
exec ${SSHD} -D -e -f "$S/sshd_config"
`;

function sshdConfig(address: string, adminUser: string): string {
  return [
    `ListenAddress ${address}:22`,
    `HostKey ${IN_HOST}/ssh_host_ed25519_key`,
    `PidFile ${IN_HOST}/sshd.pid`,
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'AuthorizedKeysFile .ssh/authorized_keys',
    `PermitRootLogin ${adminUser === 'root' ? 'prohibit-password' : 'no'}`,
    'UsePAM yes', // like a real Debian/Ubuntu VM: sessions get limits, env, loginuid
    'StrictModes yes',
    'PrintMotd no',
    'Subsystem sftp /usr/lib/openssh/sftp-server', // ansible copies files over sftp
    '',
  ].join('\n');
}

export type KeyPair = { publicKey: string; privateKey: string };

async function startHost(
  net: HostNet,
  dir: string,
  adminUser: string,
  adminKey?: KeyPair,
  restart = false,
  bootDelayMs?: number,
  givenHostKey?: KeyPair,
  keep = false,
): Promise<SshHost> {
  const name = net.netns;
  let proc: ManagedProcess | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // SIGTERM first so sshd and its sessions exit cleanly; the namespace sweep SIGKILLs the rest
      for (const pid of await netnsPids(name)) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
      await proc?.stop(2000);
      await destroyHostNet(net, keep);
      if (!keep) rmSync(dir, { recursive: true, force: true });
    })());

  try {
    for (const [sub, mode] of HOST_DIRS) {
      mkdirSync(join(dir, sub), { recursive: true });
      chmodSync(join(dir, sub), mode); // explicit: a umask of 077 would lock users out of /home
    }
    const keyFile = join(dir, 'ssh_host_ed25519_key');
    const newHostKey = async () => {
      rmSync(keyFile, { force: true });
      rmSync(`${keyFile}.pub`, { force: true });
      await must('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', keyFile]);
      return readFileSync(`${keyFile}.pub`, 'utf8').split(' ').slice(0, 2).join(' ');
    };
    const kept = keep && existsSync(`${keyFile}.pub`);
    // A VM's host is given the key its user data carries (ec2-vms.ts, as cloud-init would)
    const hostPublicKey = givenHostKey
      ? installHostKey(keyFile, givenHostKey)
      : kept
        ? publicKeyIn(`${keyFile}.pub`)
        : await newHostKey();
    const admin =
      adminKey ??
      (keep ? keptKeyPair(dir, `${adminUser}@${name}`) : undefined) ??
      generateEd25519KeyPair(`${adminUser}@${name}`);
    writeFileSync(join(dir, 'admin.pub'), `${admin.publicKey}\n`);
    if (keep) writeFileSync(join(dir, ADDRESS_FILE), net.address);
    writeFileSync(join(dir, 'sshd_config'), sshdConfig(net.address, adminUser));
    cpSync(join(REPO_ROOT, 'local-stack/apt-stand-in'), join(dir, 'apt-stand-in'), {
      recursive: true,
    });

    const args = ['netns', 'exec', name, 'unshare', '--mount', '--uts', '--ipc'];
    args.push('--propagation', 'private');
    const ids = String(net.slot * ID_BLOCK);
    args.push('--', 'sh', '-c', BOOT, 'boot', dir, name, net.address, adminUser, ids);
    const sshd = spawnManaged(`ssh host ${name}: sshd`, 'ip', args, {
      logFile: join(dir, 'sshd.log'),
      restart,
      ...(bootDelayMs !== undefined ? { restartDelayMs: bootDelayMs } : {}),
    });
    proc = sshd;
    await waitFor(
      `its banner on ${net.address}:22`,
      async () => (await sshBanner(net.address, 2000)) || undefined,
      {
        process: sshd,
        timeoutMs: 30_000,
      },
    );
    const host: SshHost = {
      name,
      address: net.address,
      port: 22,
      adminUser,
      adminPrivateKey: admin.privateKey,
      hostPublicKey,
      async swapHostKey() {
        host.hostPublicKey = await newHostKey();
        // A reinstalled host (or another machine at its address) has none of the old one's
        // connections: end them, so no pooled connection (activities/ssh/connection-pool.ts)
        // outlives the key it was made with.
        for (const pid of await netnsPids(name)) {
          if (pid !== sshd.pid && /^sshd: /.test(readCmdline(pid))) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // already gone
            }
          }
        }
        // SIGHUP: sshd re-executes itself (same pid), reading its host keys again
        process.kill(sshd.pid, 'SIGHUP');
        const blob = host.hostPublicKey.split(' ')[1]!;
        await waitFor(
          `${net.address}:22 to present its new host key`,
          async () => {
            const scan = await run('ssh-keyscan', ['-T', '2', '-t', 'ed25519', net.address]);
            return scan.stdout.includes(blob) || undefined;
          },
          { process: sshd, timeoutMs: 30_000 },
        );
        return host.hostPublicKey;
      },
      // `ip netns exec` → `unshare` → `sh` → sshd all exec in place: the pid we spawned is sshd's
      exec: (cmd) =>
        run('nsenter', [
          '--target',
          String(sshd.pid),
          '--net',
          '--mount',
          '--uts',
          '--ipc',
          '--',
          ...cmd,
        ]),
      stop,
    };
    return host;
  } catch (err) {
    await stop().catch(() => undefined);
    const message = (err as Error).message;
    throw new Error(message.startsWith('ssh host') ? message : `ssh host ${name}: ${message}`, {
      cause: err,
    });
  }
}

/** Where a kept host records the address it comes back at. */
const ADDRESS_FILE = 'address';

function publicKeyIn(file: string): string {
  return readFileSync(file, 'utf8').split(' ').slice(0, 2).join(' ');
}

/** A key pair kept in `dir` (as `admin_key`), made and written there the first time. */
export function keptKeyPair(dir: string, comment: string): KeyPair {
  const file = join(dir, 'admin_key');
  if (existsSync(file) && existsSync(`${file}.pub`)) {
    return {
      privateKey: readFileSync(file, 'utf8'),
      publicKey: readFileSync(`${file}.pub`, 'utf8'),
    };
  }
  const pair = generateEd25519KeyPair(comment);
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, pair.privateKey, { mode: 0o600 });
  writeFileSync(`${file}.pub`, pair.publicKey);
  return pair;
}

/** The address a kept host had, if it was started before. */
function keptAddress(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, ADDRESS_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A process's command line ('' once it is gone). */
function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

async function checkTools(): Promise<void> {
  for (const [path, pkg] of TOOLS) {
    if (!existsSync(path)) throw new Error(`ssh hosts: ${path} not found; install ${pkg}`);
  }
  if ((await run('ip', ['-V'])).code !== 0) {
    throw new Error('ssh hosts: ip not found; install iproute2');
  }
}

export interface SshHostAtOptions {
  /** In 10.231.0.0/16, best in 10.231.128.0/17, which pools never hand out. */
  address: string;
  /** Network namespace and host name: unique on the machine, at most 64 characters. */
  name: string;
  /** Recorded with the address, so a crashed owner's host is reclaimed by the next one. */
  prefix: string;
  /** The host's own state dir: removed and recreated at start, removed at stop. */
  stateDir: string;
  adminUser?: string;
  /** The admin user's key pair; default a fresh one. */
  adminKey?: KeyPair;
  /** The host key sshd presents (OpenSSH private key, `ssh-ed25519 …`); default a fresh one. */
  hostKey?: KeyPair;
}

/** Writes a given ed25519 host key where sshd reads it; returns its `<type> <base64>`. */
function installHostKey(keyFile: string, key: KeyPair): string {
  const publicKey = key.publicKey.trim().split(/\s+/).slice(0, 2).join(' ');
  writeFileSync(keyFile, `${key.privateKey.trim()}\n`, { mode: 0o600 });
  writeFileSync(`${keyFile}.pub`, `${publicKey}\n`);
  return publicKey;
}

/** One SSH test host at a caller-chosen address (as a cloud VM double gets its address). */
export async function startSshHostAt(opts: SshHostAtOptions): Promise<SshHost> {
  await checkTools();
  const dir = resolve(opts.stateDir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  let net: HostNet;
  try {
    net = await createHostNetAt(opts.prefix, opts.name, opts.address, dir);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return startHost(
    net,
    dir,
    opts.adminUser ?? 'hfadmin',
    opts.adminKey,
    false,
    undefined,
    opts.hostKey,
  );
}

export async function startSshHosts(opts: SshHostsOptions): Promise<SshHostPool> {
  await checkTools();
  const prefix = opts.prefix ?? `hf${process.pid}`;
  const adminUser = opts.adminUser ?? 'hfadmin';
  const stateDir = resolve(opts.stateDir);
  const hostDir = (name: string) => join(stateDir, name);
  const keep = opts.keep ?? false;
  if (!keep) rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true });

  const comeBack = keep ? (netns: string) => keptAddress(hostDir(netns)) : undefined;
  const nets = await createHostNets(prefix, opts.count, hostDir, comeBack);
  const results = await Promise.allSettled(
    nets.map((net) =>
      startHost(
        net,
        hostDir(net.netns),
        adminUser,
        opts.adminKey,
        opts.restart,
        opts.bootDelayMs,
        undefined,
        keep,
      ),
    ),
  );
  const hosts = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  let stopping: Promise<void> | undefined;
  const pool: SshHostPool = {
    hosts,
    stop: () =>
      (stopping ??= (async () => {
        await Promise.all(hosts.map((h) => h.stop()));
        if (!keep) rmSync(stateDir, { recursive: true, force: true });
      })()),
  };
  const failures = results.flatMap((r) =>
    r.status === 'rejected' ? [(r.reason as Error).message] : [],
  );
  if (failures.length > 0) {
    await pool.stop();
    throw new Error(failures.join('\n'));
  }
  return pool;
}

/** The MAC address of the host's network interface, as a BareMetalHost's NIC reports it. */
export async function hostMac(host: SshHost): Promise<string> {
  const found = await host.exec([
    'sh',
    '-c',
    'cat /sys/class/net/*/address | grep -v "^00:00:00:00:00:00$" | head -1',
  ]);
  return found.stdout.trim();
}
