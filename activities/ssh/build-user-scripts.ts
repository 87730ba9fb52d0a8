// The pure part of provisioning a build user (DESIGN.md §5): names, paths, validation of every
// value that reaches a remote shell, and the fixed scripts that run there.
//
// No shell injection by construction: the scripts are constants run as `sudo -n bash -s -- ARGS`
// with the script on stdin; values travel only as positional arguments, each checked against a
// strict pattern here and then single-quoted (ssh exec passes the command line through the remote
// login shell). Nothing is ever interpolated into script text.
import { generateEd25519KeyPair } from './keys.js';
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';

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
 * `u-` + 12 hex of sha256("<namespace>/<name>"): deterministic, so a retry or a cleanup after a
 * restart finds the same user; hashed, so no TaskRun name can put a character of its own into
 * a remote command; short, well under the 32 characters useradd allows.
 */
export function buildUserName(namespace: string, taskRunName: string): string {
  const hash = createHash('sha256').update(`${namespace}/${taskRunName}`).digest('hex');
  return `u-${hash.slice(0, 12)}`;
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

function checkPath(what: string, path: string): string {
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

/** Exit codes the scripts use for outcomes that retrying cannot fix (sysexits.h). */
export const EXIT_SUDOERS_REJECTED = 65;
/** …and for those it can. */
export const EXIT_PROCESSES_SURVIVE = 75;

// Each script is one function called with stdin from /dev/null: bash -s reads its script from
// stdin as it goes, so a command reading stdin would otherwise eat the rest of the script.

/** Args: user home build-dir public-key sudoers-line-or-empty. Idempotent; a rerun replaces the key. */
const PROVISION_SCRIPT = `set -eu
main() {
  local U=$1 H=$2 B=$3 KEY=$4 RULE=$5
  if ! id -u "$U" >/dev/null 2>&1; then
    # a crashed removal's leftovers must not reach the new user, nor block useradd
    rm -rf --one-file-system -- "$H"
    if getent group "$U" >/dev/null; then groupdel "$U"; fi
    # '*' rather than useradd's '!': no password login, and sshd never sees the account as locked
    useradd -m -d "$H" -s /bin/bash -p '*' "$U"
  fi
  local G
  G=$(id -g "$U")
  chown "$U:$G" "$H"
  chmod 700 "$H"
  install -d -m 700 -o "$U" -g "$G" "$H/.ssh" "$B"
  # the only key: written aside, then renamed over, so a retry never leaves two or a torn file
  local T
  T=$(mktemp "$H/.ssh/.authorized_keys.XXXXXX")
  printf '%s\\n' "$KEY" >"$T"
  chown "$U:$G" "$T"
  chmod 600 "$T"
  mv -f -- "$T" "$H/.ssh/authorized_keys"
  local F=/etc/sudoers.d/$U
  if [ -z "$RULE" ]; then
    rm -f -- "$F"
    return 0
  fi
  # sudo skips names containing a dot, so the file takes effect only once checked and renamed
  T=$(mktemp /etc/sudoers.d/.hostflow.XXXXXX)
  printf '%s\\n' "$RULE" >"$T"
  chmod 440 "$T"
  if command -v visudo >/dev/null && ! visudo -cqf "$T" >&2; then
    rm -f -- "$T"
    echo "visudo rejected the rule for $U" >&2
    exit ${EXIT_SUDOERS_REJECTED}
  fi
  mv -f -- "$T" "$F"
}
main "$@" </dev/null
`;

/**
 * Args: user home. Prints `removed` or `absent`. Kills only this host's processes of the user:
 * those in our network namespace, or in a user namespace of their own (rootless containers, as
 * userdel itself judges). Same-numbered uids elsewhere on the kernel (containers run by root,
 * other test hosts) belong to someone else.
 */
const REMOVE_SCRIPT = `set -eu
main() {
  local U=$1 H=$2
  rm -f -- "/etc/sudoers.d/$U" # first, so nothing escalates while we clean up
  if ! id -u "$U" >/dev/null 2>&1; then
    rm -rf --one-file-system -- "$H"
    if getent group "$U" >/dev/null; then groupdel "$U"; fi
    echo absent
    return 0
  fi
  local NET USERNS
  NET=$(readlink /proc/self/ns/net) USERNS=$(readlink /proc/self/ns/user)
  ours() {
    local p
    for p in $({ pgrep -u "$U" || true; pgrep -U "$U" || true; } | sort -un); do
      [ "$(ps -o state= -p "$p" 2>/dev/null | tr -d ' ')" != Z ] || continue # zombies hold nothing
      if [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$NET" ] ||
        [ "$(readlink "/proc/$p/ns/user" 2>/dev/null || echo "$USERNS")" != "$USERNS" ]; then
        echo "$p"
      fi
    done
  }
  local i pids
  for i in $(seq 50); do
    pids=$(ours)
    [ -n "$pids" ] || break
    kill -KILL $pids 2>/dev/null || true # a fork may race the scan: the loop catches it
    sleep 0.1
  done
  pids=$(ours)
  if [ -n "$pids" ]; then
    echo "processes of $U survive SIGKILL:" $pids >&2
    exit ${EXIT_PROCESSES_SURVIVE}
  fi
  # -f: what is left are zombies and other namespaces' uids, which userdel cannot tell apart.
  # Its exit code mixes warnings (no mail spool) with failures, so judge by the result.
  userdel -f -r "$U" >&2 || true
  if id -u "$U" >/dev/null 2>&1; then
    echo "userdel could not remove $U" >&2
    exit 1
  fi
  rm -rf --one-file-system -- "$H"
  if getent group "$U" >/dev/null; then groupdel "$U"; fi
  echo removed
}
main "$@" </dev/null
`;

export interface RemoteScript {
  script: string;
  args: string[];
}

export function provisionScript(
  user: string,
  publicKey: string,
  sudoCommands: readonly string[],
): RemoteScript {
  const args = [
    checkBuildUser(user),
    checkPath('home', homeDir(user)),
    checkPath('build dir', buildDir(user)),
    checkPublicKey(publicKey),
    sudoersLine(user, sudoCommands),
  ];
  return { script: PROVISION_SCRIPT, args };
}

export function removeScript(user: string): RemoteScript {
  return { script: REMOVE_SCRIPT, args: [checkBuildUser(user), checkPath('home', homeDir(user))] };
}
