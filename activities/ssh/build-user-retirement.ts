// The shell functions that retire a build user completely: everything that runs or can run as
// any uid it had (its own and its subordinate ranges, as rootless containers use them) ends, and
// its ids stay taken until every trace of them is gone. Used by build-user-scripts.ts.
//
// Why the ids are held: the next user usually gets the same uid, and whatever the old one left
// (an `at` job, a file in /tmp, a setuid binary, a shm segment) would then be the new one's. So a
// retired user's account is replaced, under the host lock, by a placeholder `hf-retired-<uid>`
// with the same uid and gid and the same subordinate ranges, which no login can use. The slow
// part, deleting its files in the shared temporary directories (a build may leave millions),
// runs without the lock; only then is the placeholder deleted and the ids free again.
//
// Nothing here follows a path a tenant controls: find never follows links (-P) and stays on each
// directory's filesystem (-xdev), files are matched by owner and unlinked, never opened.

/** Exit code when processes outlive every SIGKILL (sysexits.h EX_TEMPFAIL): retried. */
const EXIT_PROCESSES_SURVIVE = 75;

/** Placeholder accounts holding a retired user's ids: this and its uid. */
const RETIRED_PREFIX = 'hf-retired-';

/** Where files of any user may be left: each is searched for a retired user's files. */
const SHARED_DIRS = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', '/var/crash'];

/** Where `at` keeps jobs and their output (Debian, then Red Hat); a job runs as its file's owner. */
const AT_SPOOLS = [
  '/var/spool/cron/atjobs',
  '/var/spool/cron/atspool',
  '/var/spool/at',
  '/var/spool/at/spool',
];

/** Where cron keeps crontabs, named after their user (Debian, Red Hat, SUSE). */
const CRON_SPOOLS = ['/var/spool/cron/crontabs', '/var/spool/cron', '/var/spool/cron/tabs'];

/** Needs STATE, lock and unlock from the script it is part of. */
export const RETIREMENT_FUNCTIONS = `
RETIRED=${RETIRED_PREFIX}
# "first last" for the uid and each subordinate uid range of name (or uid) $1: what its
# processes and files can be owned by.
id_ranges() {
  local N=$1 ID=$2
  echo "$ID $ID"
  if [ -r /etc/subuid ]; then
    awk -F: -v n="$N" -v i="$ID" '($1 == n || $1 == i) && $2 ~ /^[0-9]+$/ && $3 ~ /^[1-9][0-9]*$/ {
      print $2, $2 + $3 - 1 }' /etc/subuid
  fi
}
# find's test for "owned by a uid in the ranges $1" (an argument list, one word each).
owned_by() {
  local first last
  printf '%s\\n' '('
  while read -r first last; do
    [ "$first" = "$last" ] && printf '%s\\n' -uid "$first" -o && continue
    printf '%s\\n' '(' -uid "+$((first - 1))" -uid "-$((last + 1))" ')' -o
  done <<<"$1"
  printf '%s\\n' -false ')'
}
# "pid uid ours" for each live process with any uid in the ranges $1 (the real uid when that is
# one, else the first that is): ours=1 for those of this host, in our network namespace or in a
# user namespace of their own (rootless containers, as userdel judges); same-numbered uids
# elsewhere on the kernel (containers run by root, other test hosts) belong to someone else.
processes_with() {
  local NET USERNS p u
  NET=$(readlink /proc/self/ns/net) USERNS=$(readlink /proc/self/ns/user)
  # zombies hold nothing (and init may reap them only now and then): skipped by their State
  grep -sH -e '^State:' -e '^Uid:' /proc/[0-9]*/task/[0-9]*/status | awk -v r="$(printf '%s ' $1)" '
    BEGIN { n = split(r, a, " ") }
    $1 ~ /:State:$/ { zombie = $2 == "Z"; next }
    !zombie { split($1, f, "/"); for (k = 2; k <= 5; k++) for (j = 1; j < n; j += 2)
        if ($k + 0 >= a[j] + 0 && $k + 0 <= a[j + 1] + 0) { print f[3], $k; next } }' |
    sort -un | while read -r p u; do
    if [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$NET" ] ||
      [ "$(readlink "/proc/$p/ns/user" 2>/dev/null || echo "$USERNS")" != "$USERNS" ]; then
      echo "$p $u 1"
    else
      echo "$p $u 0"
    fi
  done
}
processes_in() { processes_with "$1" | awk '$3 == 1 { print $1 }'; }
# Ends every process of this host in the ranges $2, bounded. A uid whose processes are all ours
# is ended by kill(-1) as that uid: the kernel signals them all at once, so neither a fork nor a
# process that hops to a new pid faster than a scan escapes. Others are stopped, then killed: a
# stopped process forks no more.
end_processes() {
  local WHO=$1 R=$2 i found pids u
  for i in $(seq 100); do
    found=$(processes_with "$R")
    pids=$(awk '$3 == 1 { print $1 }' <<<"$found")
    [ -n "$pids" ] || return 0
    kill -STOP $pids 2>/dev/null || true
    for u in $(awk '$3 == 1 { print $2 }' <<<"$found" | sort -u); do
      if ! awk -v u="$u" '$2 == u && $3 == 0 { bad = 1 } END { exit !bad }' <<<"$found"; then
        setpriv --reuid="$u" --regid=65534 --clear-groups -- kill -9 -1 2>/dev/null || true
      fi
    done
    kill -KILL $pids $(processes_in "$R") 2>/dev/null || true
    sleep 0.1
  done
  echo "processes of $WHO survive SIGKILL:" $(processes_in "$R") >&2
  exit ${EXIT_PROCESSES_SURVIVE}
}
# Its at jobs (owned by its uid), its crontab (named after it), its systemd lingering and user
# manager. A host without at, cron or systemd has nothing of them.
remove_jobs() {
  local U=$1 ID=$2 d
  for d in ${CRON_SPOOLS.join(' ')}; do
    if [ -f "$d/$U" ] || [ -L "$d/$U" ]; then rm -f -- "$d/$U"; fi
  done
  for d in ${AT_SPOOLS.join(' ')}; do
    if [ -d "$d" ] && [ ! -L "$d" ]; then find "$d" -maxdepth 1 ! -type d -uid "$ID" -delete; fi
  done
  rm -f -- "/var/lib/systemd/linger/$U"
  if [ -d /run/systemd/system ] && command -v loginctl >/dev/null; then
    loginctl terminate-user "$U" >/dev/null 2>&1 || true
    systemctl stop "user@$ID.service" >/dev/null 2>&1 || true
  fi
}
# SysV IPC objects owned or created by a uid in the ranges $1, and POSIX message queues owned by
# one: the kernel keeps them after their processes end. The queues are seen through a private
# mount of this IPC namespace's mqueue filesystem, whether or not the host mounts /dev/mqueue.
remove_ipc() {
  local R=$1 kind flag id
  for kind in shm:m sem:s msg:q; do
    flag=\${kind#*:} kind=\${kind%:*}
    [ -r "/proc/sysvipc/$kind" ] || continue
    for id in $(awk -v r="$(printf '%s ' $R)" '
      BEGIN { n = split(r, a, " ") }
      NR == 1 { for (k = 1; k <= NF; k++) { if ($k == "uid") u = k; if ($k == "cuid") c = k }
        if ($2 ~ /id$/) i = 2; next }
      { for (j = 1; j < n; j += 2)
          if (($u + 0 >= a[j] + 0 && $u + 0 <= a[j + 1] + 0) ||
              ($c + 0 >= a[j] + 0 && $c + 0 <= a[j + 1] + 0)) { print $i; next } }' \\
      "/proc/sysvipc/$kind"); do
      ipcrm "-$flag" "$id" 2>/dev/null || true # an object gone meanwhile
    done
  done
  install -d -m 700 -o root -g root "$STATE/.mqueue"
  # shellcheck disable=SC2016
  unshare --mount --propagation private -- sh -c '
    set -eu
    D=$1
    shift
    mount -t mqueue mqueue "$D"
    find "$D" -mindepth 1 -maxdepth 1 "$@" -delete
  ' sh "$STATE/.mqueue" $(owned_by "$R")
}
# Files owned by a uid in the ranges $1 in the shared directories. Can take long: never under
# the lock.
remove_files() {
  local R=$1 d
  for d in ${SHARED_DIRS.join(' ')}; do
    if [ -d "$d" ] && [ ! -L "$d" ]; then
      find "$d" -xdev -mindepth 1 $(owned_by "$R") -delete 2>/dev/null || true
    fi
  done
}
# Under the lock, quick however much the user left: ends the user's jobs, processes and IPC
# objects, and replaces its account by the placeholder holding its ids (see above). Its files in
# the shared directories stay until reap_retired.
retire_account() {
  local U=$1 ID GID P R range
  ID=$(id -u "$U") GID=$(id -g "$U")
  P=$RETIRED$ID
  R=$(id_ranges "$U" "$ID")
  remove_jobs "$U" "$ID" # first: no daemon starts one while its processes end
  end_processes "$U" "$R"
  remove_ipc "$R"
  getent group "$P" >/dev/null || groupadd -o -g "$GID" "$P"
  if ! getent passwd "$P" >/dev/null; then
    useradd -o -u "$ID" -g "$GID" -M -d /nonexistent -s /usr/sbin/nologin -p '!' \\
      -K SUB_UID_COUNT=0 -K SUB_GID_COUNT=0 "$P"
  fi
  local subuids subgids
  subuids=$(subid_ranges /etc/subuid "$U" "$ID") subgids=$(subid_ranges /etc/subgid "$U" "$ID")
  # -f: what is left are zombies and other namespaces' uids, which userdel cannot tell apart.
  # Its exit code mixes warnings (no mail spool) with failures, so judge by the result.
  userdel -f "$U" >&2 || true
  if id -u "$U" >/dev/null 2>&1; then
    echo "userdel could not remove $U" >&2
    exit 1
  fi
  # userdel released the user's subordinate ranges: the placeholder takes them on (not before:
  # usermod takes a range another account of the same uid holds as already its own)
  for range in $subuids; do usermod -v "$range" "$P"; done
  for range in $subgids; do usermod -w "$range" "$P"; done
}
# "first-last" for each subordinate range of name $2 (or uid $3) in file $1.
subid_ranges() {
  if [ -r "$1" ]; then
    awk -F: -v n="$2" -v i="$3" '($1 == n || $1 == i) && $2 ~ /^[0-9]+$/ && $3 ~ /^[1-9][0-9]*$/ {
      print $2 "-" $2 + $3 - 1 }' "$1"
  fi
}
# Deletes what a retired user left in the shared directories (without the lock), then, under
# it, the placeholder, which frees its uid, gid and subordinate ranges. One reaper per
# placeholder at a time; another one's is left to it.
reap_retired() {
  local P=$1 ID R
  ID=$(id -u "$P" 2>/dev/null) || return 0
  exec 8>"$STATE/.reaping-$ID"
  if ! flock -n 8; then
    exec 8>&-
    return 0
  fi
  R=$(id_ranges "$P" "$ID")
  end_processes "$P" "$R" # one started since through a setuid file of its, say
  remove_files "$R"
  lock
  if getent passwd "$P" >/dev/null; then
    end_processes "$P" "$R"
    remove_ipc "$R"
    userdel -f "$P" >&2 || true
    if getent passwd "$P" >/dev/null; then
      echo "userdel could not remove $P" >&2
      exit 1
    fi
  fi
  if getent group "$P" >/dev/null; then groupdel -f "$P"; fi
  rm -f -- "/var/mail/$P" "/var/spool/mail/$P"
  unlock
  rm -f -- "$STATE/.reaping-$ID"
  exec 8>&-
}
reap_all_retired() {
  local P
  for P in $(getent passwd | cut -d: -f1 | grep -E "^$RETIRED[0-9]+\\$" || true); do
    reap_retired "$P"
  done
}
`;
