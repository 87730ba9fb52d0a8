// Build users' names and paths, and the validation of every value that reaches a remote shell
// (docs/architecture.md, "Build users"). The scripts that use them are in build-user-scripts.ts.
//
// No shell injection by construction: the scripts are constants run as `sudo -n bash -s -- ARGS`
// with the script on stdin; values travel only as positional arguments, each checked against a
// strict pattern here and then single-quoted (ssh exec passes the command line through the remote
// login shell). Nothing is ever interpolated into script text.
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import type { TaskRunRef } from '../../shared/contracts/taskrun.js';
import { generateEd25519KeyPair } from './keys.js';

export const BUILD_USER_PATTERN = /^u-[0-9a-f]{12}$/;
export const ADMIN_USER_PATTERN = /^[a-z_][a-z0-9_-]{0,31}$/;
export const PUBLIC_KEY_PATTERN = /^ssh-ed25519 [A-Za-z0-9+/]+={0,3}( [^\s]*)?$/;
export const SUDO_COMMAND_PATTERN = /^\/[A-Za-z0-9._/+-]+$/;
/** What the scripts take as a home or build directory: absolute, no spaces or shell characters. */
const PATH_PATTERN = /^\/[A-Za-z0-9._/-]+$/;
const SUDOERS_LINE_PATTERN = /^u-[0-9a-f]{12} ALL=\(root\) NOPASSWD: \/[A-Za-z0-9._/+, -]+$/;

/** The build user's working directory under its home: the Secret's `user-dir`. */
export const BUILD_DIR_NAME = 'build';

/**
 * `u-` + 12 hex of sha256("<namespace>/<name>/<uid>"): deterministic, so a retry or a cleanup
 * after a restart finds the same user; per uid, so a TaskRun re-created under the same name never
 * shares a user with its predecessor; hashed, so no TaskRun name can put a character of its own
 * into a remote command; short, well under the 32 characters useradd allows.
 */
export function buildUserName(taskRun: TaskRunRef): string {
  return hashedUser(`${taskRun.namespace}/${taskRun.name}/${taskRun.uid}`);
}

/** The name releases before the uid was part of it used; its users are still removed. */
export function legacyBuildUserName(namespace: string, taskRunName: string): string {
  return hashedUser(`${namespace}/${taskRunName}`);
}

function hashedUser(text: string): string {
  return `u-${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
}

export function homeDir(user: string): string {
  return `/home/${checkBuildUser(user)}`;
}

export function buildDir(user: string): string {
  return `${homeDir(user)}/${BUILD_DIR_NAME}`;
}

/** A fresh key pair for a build user (its public key checked like every remote value). */
export function generateBuildUserKey(user: string): { privateKey: string; publicKey: string } {
  const pair = generateEd25519KeyPair(`${checkBuildUser(user)}@hostflow`);
  return { privateKey: pair.privateKey, publicKey: checkPublicKey(pair.publicKey) };
}

function unsafe(what: string, value: string, allowed: string): never {
  const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  throw ApplicationFailure.nonRetryable(
    `refusing to send ${what} ${shown} to a host: ${allowed}`,
    'UnsafeRemoteValue',
  );
}

export function checkBuildUser(user: string): string {
  if (!BUILD_USER_PATTERN.test(user)) unsafe('build user', user, 'expected u- and 12 hex digits');
  return user;
}

export function checkAdminUser(user: string): string {
  if (!ADMIN_USER_PATTERN.test(user)) {
    unsafe(
      'admin user',
      user,
      'host.<name>.user must be a POSIX user name (lower case letters, digits, _ and -)',
    );
  }
  return user;
}

export function checkPublicKey(key: string): string {
  if (!PUBLIC_KEY_PATTERN.test(key)) unsafe('public key', key, 'expected one ssh-ed25519 line');
  return key;
}

export function checkSudoCommands(commands: readonly string[]): string[] {
  for (const command of commands) {
    if (!SUDO_COMMAND_PATTERN.test(command)) {
      unsafe(
        'sudo command',
        command,
        'sudo-commands must be a comma list of absolute paths without spaces or shell characters',
      );
    }
  }
  return [...commands];
}

export function checkPath(what: string, path: string): string {
  if (!PATH_PATTERN.test(path) || path.split('/').includes('..')) {
    unsafe(what, path, 'expected an absolute path without spaces, shell characters or ..');
  }
  return path;
}

/** The sudoers rule, or '' for none: commands run as root without a password, nothing else. */
export function sudoersLine(user: string, commands: readonly string[]): string {
  if (commands.length === 0) return '';
  const line = `${checkBuildUser(user)} ALL=(root) NOPASSWD: ${checkSudoCommands(commands).join(', ')}`;
  if (!SUDOERS_LINE_PATTERN.test(line)) unsafe('sudoers rule', line, 'one line, validated parts');
  return line;
}

/** POSIX single quoting: the result is one word in sh, bash, dash and zsh. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The exec command line: a fixed script read from stdin, the values as quoted arguments. */
export function remoteCommand(args: readonly string[]): string {
  return ['sudo', '-n', 'bash', '-s', '--', ...args.map(shellQuote)].join(' ');
}
