// The sandbox a ClusterOperation's custom action (a tenant's own playbook or shell script) runs in
// on the worker, with bubblewrap: ansible runs a playbook's lookups, templates and local tasks on
// the controller, so a tenant's playbook is code on the worker. Inside it sees the system's
// programs read-only, the ansible install read-only, and its cluster's own directory; not the
// worker's files, its service-account token, other clusters' keys, or its environment. It has no
// network: the SSH relay (ssh-relay.ts) is its only way out, to its own nodes' sshd. It runs as
// nobody in user, PID, IPC, UTS and cgroup namespaces of its own, with no /proc, and dies with
// the worker.
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { promisify } from 'node:util';
import { RELAY_INSIDE } from './ssh-relay.js';

const run = promisify(execFile);

export interface SandboxPaths {
  /** The cluster's directory: the only place it may write, seen at the same path. */
  clusterDir: string;
  /** The relay's socket directory, seen at RELAY_INSIDE. */
  relayDir: string;
  /** Read-only besides the system's: the ansible install (its venv). */
  readOnly: string[];
}

/** The system's programs and libraries, with merged-/usr's links as links. */
const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32'];
/** The few files of /etc that ssh, Python and TLS need: users, name service, CA certificates. */
const ETC = [
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/hosts',
  '/etc/ld.so.cache',
  '/etc/localtime',
  '/etc/alternatives',
  '/etc/ssl/certs',
  '/etc/ca-certificates',
];
const NOBODY = '65534';

/** bubblewrap's arguments to run `command` with `env` in the sandbox. */
export function sandboxArgs(
  paths: SandboxPaths,
  command: string[],
  env: Record<string, string>,
): string[] {
  const args = [
    '--unshare-all',
    '--uid',
    NOBODY,
    '--gid',
    NOBODY,
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    // First, so the binds below (the venv may live under /tmp) land on top of the empty /tmp.
    // No /proc: ansible and ssh do without, the worker's processes stay out of sight, and a
    // container's masked /proc refuses to mount a new one.
    ...['--dev', '/dev', '--tmpfs', '/tmp'],
  ];
  for (const path of SYSTEM) {
    if (!existsSync(path)) continue;
    const stat = lstatSync(path);
    args.push(...(stat.isSymbolicLink() ? ['--symlink', readlinkSync(path)] : ['--ro-bind']));
    if (!stat.isSymbolicLink()) args.push(path);
    args.push(path);
  }
  for (const path of ETC) if (existsSync(path)) args.push('--ro-bind', path, path);
  for (const path of paths.readOnly) args.push('--ro-bind', path, path);
  args.push(
    ...['--bind', paths.clusterDir, paths.clusterDir],
    ...['--ro-bind', paths.relayDir, RELAY_INSIDE],
    ...['--chdir', paths.clusterDir, '--clearenv'],
  );
  for (const [name, value] of Object.entries(env)) args.push('--setenv', name, value);
  return [...args, '--', ...command];
}

/**
 * Why custom actions cannot run on this worker, or undefined when they can: bubblewrap and socat
 * are installed, and the worker may make the namespaces (a container needs a seccomp profile
 * that allows user namespaces).
 */
export async function sandboxProblem(bwrap = 'bwrap'): Promise<string | undefined> {
  try {
    await run(bwrap, [
      ...sandboxArgs({ clusterDir: '/tmp', relayDir: '/tmp', readOnly: [] }, ['socat', '-V'], {
        PATH: '/usr/bin:/bin',
      }),
    ]);
    return undefined;
  } catch (err) {
    const detail = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
    return (
      `this worker cannot sandbox custom actions (${detail.split('\n')[0]}): install ` +
      'bubblewrap and socat, and let it create user namespaces'
    );
  }
}
