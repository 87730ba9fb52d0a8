// The fixed scripts that create, list and remove build users on a host, run as root through
// `sudo -n bash -s -- ARGS` (see build-user-names.ts for how values reach them).
//
// What the scripts never do: reuse a user that already exists, or write as root anywhere a build
// user could have changed. A user of the name being provisioned is stale (a crashed attempt, an
// earlier run) and is removed with everything it owns before a fresh one is made; the key and
// build directory are then written as the new user itself (setpriv), so no link planted in a
// home can send root's writes elsewhere. Each user has a root-owned marker with its creation
// time (under /var/lib/hostflow), which garbage collection reads; one lock per host serializes
// the user-database steps, and the slow parts of a removal (the home, the user's files in the
// shared temporary directories) run outside it, while a placeholder account holds the retired
// user's ids (build-user-retirement.ts).
import {
  buildDir,
  checkBuildUser,
  checkPath,
  checkPublicKey,
  homeDir,
  sudoersLine,
} from './build-user-names.js';
import { RETIREMENT_FUNCTIONS } from './build-user-retirement.js';

/** Exit codes the scripts use for outcomes that retrying cannot fix (sysexits.h). */
export const EXIT_SUDOERS_REJECTED = 65;
/** The host lacks a tool the scripts need (see docs/taskruns.md, "Host requirements"). */
export const EXIT_REQUIREMENT_MISSING = 69;

export interface RemoteScript {
  script: string;
  args: string[];
}

// Each script is a set of functions and one call of main with stdin from /dev/null: bash -s
// reads its script from stdin as it goes, so a command reading stdin would otherwise eat the rest.
const COMMON = `set -eu
STATE=/var/lib/hostflow/build-users
require() {
  local tool
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "the host lacks $tool (util-linux), which hostflow needs to manage build users" >&2
      exit ${EXIT_REQUIREMENT_MISSING}
    fi
  done
}
# Serializes user-database changes on this host (provisioning, removal, garbage collection).
lock() {
  install -d -m 700 -o root -g root /var/lib/hostflow "$STATE"
  exec 9<"$STATE"
  flock -w 120 9
}
unlock() { exec 9<&-; }
${RETIREMENT_FUNCTIONS}
# Under the lock: retires the user (retire_account), removes its sudo rule, mail and marker, and
# moves the home aside into TRASH (deleted by the caller, outside the lock, however long that
# takes). Prints nothing.
retire_user() {
  local U=$1 H=$2 TRASH=$3
  rm -f -- "/etc/sudoers.d/$U" # first, so nothing escalates while we clean up
  if id -u "$U" >/dev/null 2>&1; then retire_account "$U"; fi
  if getent group "$U" >/dev/null; then groupdel -f "$U"; fi
  rm -f -- "/var/mail/$U" "/var/spool/mail/$U" "$STATE/$U"
  if [ -e "$H" ] || [ -L "$H" ]; then
    install -d -m 700 -o root -g root "$TRASH"
    mv -- "$H" "$(mktemp -u "$TRASH/$U.XXXXXX")"
  fi
}
empty_trash() {
  if [ -d "$1" ]; then rm -rf --one-file-system -- "$1"/u-* 2>/dev/null || true; fi
}
`;

/** Args: user home build-dir public-key sudoers-line-or-empty. A rerun replaces the user. */
const PROVISION_SCRIPT = `${COMMON}
main() {
  local U=$1 H=$2 B=$3 KEY=$4 RULE=$5 G T
  local TRASH
  TRASH=$(dirname "$H")/.hostflow-removed
  require flock setpriv unshare ipcrm
  lock
  retire_user "$U" "$H" "$TRASH" # a user of this name is stale: never reused
  date +%s >"$STATE/$U"
  # '*' rather than useradd's '!': no password login, and sshd never sees the account as locked
  useradd -m -d "$H" -s /bin/bash -p '*' "$U"
  G=$(id -g "$U")
  chown "$U:$G" "$H"
  chmod 700 "$H"
  # As the user: a link in the home can only lead where the user may write anyway.
  setpriv --reuid="$U" --regid="$G" --init-groups -- sh -c '
    set -eu
    umask 077
    mkdir -p -- "$1/.ssh" "$2"
    printf "%s\\n" "$3" >"$1/.ssh/authorized_keys"
  ' sh "$H" "$B" "$KEY"
  local F=/etc/sudoers.d/$U
  if [ -n "$RULE" ]; then
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
  fi
  unlock
  empty_trash "$TRASH"
}
main "$@" </dev/null
`;

/**
 * Args: user home min-age-seconds. Prints `removed`, `absent`, or `young` when the user was
 * created (or re-created) less than min-age seconds ago and is left alone (garbage collection's
 * guard against racing a provisioning). Kills only this host's processes of the user. Also
 * finishes every retired user on the host (a stale one replaced by a provisioning, or one whose
 * removal was interrupted).
 */
const REMOVE_SCRIPT = `${COMMON}
main() {
  local U=$1 H=$2 MIN_AGE=$3 TRASH created existed=absent
  TRASH=$(dirname "$H")/.hostflow-removed
  require flock setpriv unshare ipcrm
  lock
  if [ "$MIN_AGE" -gt 0 ] && [ -f "$STATE/$U" ]; then
    created=$(cat "$STATE/$U" 2>/dev/null || echo 0)
    case $created in '' | *[!0-9]*) created=0 ;; esac
    if [ $(($(date +%s) - created)) -lt "$MIN_AGE" ]; then
      echo young
      return 0
    fi
  fi
  if id -u "$U" >/dev/null 2>&1 || [ -e "$H" ]; then existed=removed; fi
  retire_user "$U" "$H" "$TRASH"
  unlock
  empty_trash "$TRASH"
  reap_all_retired # this user's leftovers, and any an interrupted removal left
  echo "$existed"
}
main "$@" </dev/null
`;

/** No args. Prints `<user> <age in seconds, or ->` for each build user on the host. */
const LIST_SCRIPT = `${COMMON}
main() {
  local now U created
  now=$(date +%s)
  getent passwd | cut -d: -f1 | grep -E '^u-[0-9a-f]{12}$' | while read -r U; do
    created=$(cat "$STATE/$U" 2>/dev/null || true)
    case $created in '' | *[!0-9]*) echo "$U -" ;; *) echo "$U $((now - created))" ;; esac
  done
}
main "$@" </dev/null
`;

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

/** `minAgeSeconds` > 0 spares a user created that recently (garbage collection). */
export function removeScript(user: string, minAgeSeconds = 0): RemoteScript {
  const age = String(Math.max(0, Math.floor(minAgeSeconds)));
  return {
    script: REMOVE_SCRIPT,
    args: [checkBuildUser(user), checkPath('home', homeDir(user)), age],
  };
}

export function listScript(): RemoteScript {
  return { script: LIST_SCRIPT, args: [] };
}

/** Parses LIST_SCRIPT's output. Lines that are not a build user are ignored. */
export function parseBuildUserList(out: string): Array<{ user: string; ageSeconds?: number }> {
  return out.split('\n').flatMap((line) => {
    const match = /^(u-[0-9a-f]{12}) (\d+|-)$/.exec(line.trim());
    if (!match) return [];
    return [{ user: match[1]!, ...(match[2] !== '-' ? { ageSeconds: Number(match[2]) } : {}) }];
  });
}
