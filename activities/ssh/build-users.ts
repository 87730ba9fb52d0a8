// SSH adapter for static hosts (docs/architecture.md, "Build users"): creates and removes per-build users over one SSH
// connection each, as the host's admin with `sudo -n`. The build user's private key is generated
// here and returned only to the caller in the same process: `provisionBuildUser` is a plain
// function, not an activity, so the key never lands in workflow history.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  buildDir,
  buildUserName,
  checkAdminUser,
  checkBuildUser,
  generateBuildUserKey,
  legacyBuildUserName,
  remoteCommand,
} from './build-user-names.js';
import {
  EXIT_REQUIREMENT_MISSING,
  EXIT_SUDOERS_REJECTED,
  listScript,
  parseBuildUserList,
  provisionScript,
  removeScript,
  type RemoteScript,
} from './build-user-scripts.js';
import type { AdminKeyReader } from '../kubernetes/admin-keys.js';
import type { HostKeys } from './host-keys.js';
import {
  classifySshError,
  withSsh,
  type ExecResult,
  type SshContext,
  type SshOptions,
} from './session.js';
import type { Host } from '../../platform-config/host.js';
import type { TaskRunRef } from '../../shared/contracts/taskrun.js';

/** What connecting to a host needs: its build-user settings (concurrency, sudo) aside. */
export type HostRef = Pick<Host, 'name' | 'address' | 'user' | 'secret' | 'port' | 'hostKey'>;

export interface BuildUserInput {
  host: HostRef & Partial<Pick<Host, 'sudoCommands'>>;
  taskRun: TaskRunRef;
}

/**
 * Whose build user to remove: `user` as delivered when known, else the TaskRun's. Activities
 * scheduled by releases before the uid was part of the name carry `namespace` and `taskRunName`.
 */
export interface RemoveBuildUserInput {
  host: HostRef;
  taskRun?: TaskRunRef;
  user?: string;
  namespace?: string;
  taskRunName?: string;
}

export interface ProvisionedUser {
  user: string;
  /** The Secret's `user-dir`. */
  userDir: string;
  /** OpenSSH format. Goes to the OTP service only; never to history, payloads or logs. */
  privateKey: string;
}

export interface SshDeps {
  adminKey: AdminKeyReader;
  hostKeys: HostKeys;
}

const PROVISION_TIMEOUT_MS = 60_000;
/** Removing a home full of container layers can take as long as it takes: no limit (0). */
const REMOVE_TIMEOUT_MS = 0;
const LIST_TIMEOUT_MS = 60_000;
const HEARTBEAT_MS = 5_000;

const sshContext = (host: HostRef): SshContext => ({
  host: host.name,
  address: host.address,
  port: host.port,
  user: host.user,
  secret: host.secret,
});

/** Names the host in a rejected value's message: config problems must say where to look. */
function forHost<T>(host: HostRef, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || err.type !== 'UnsafeRemoteValue') throw err;
    throw ApplicationFailure.nonRetryable(`ssh host ${host.name}: ${err.message}`, err.type);
  }
}

/** The last lines of stderr: what a person needs, bounded. */
const tail = (text: string) => text.trim().split('\n').slice(-5).join(' | ').slice(-500);

function checkResult(result: ExecResult, host: HostRef, action: string): void {
  if (result.code === 0) return;
  const at = `ssh host ${host.name} (${host.address}) as ${host.user}: ${action}`;
  const stderr = tail(result.stderr);
  if (/^sudo: .*(password is required|not in the sudoers|may not run sudo)/m.test(result.stderr)) {
    throw ApplicationFailure.nonRetryable(
      `${at}: sudo refused (${stderr}); give ${host.user} passwordless sudo on the host ` +
        `(see Host Requirements), or correct host.${host.name}.user`,
      'SshSudoRejected',
    );
  }
  if (result.code === EXIT_REQUIREMENT_MISSING) {
    throw ApplicationFailure.nonRetryable(
      `${at}: ${stderr}; install it on the host (see Host Requirements)`,
      'HostRequirementMissing',
    );
  }
  if (result.code === EXIT_SUDOERS_REJECTED) {
    throw ApplicationFailure.nonRetryable(
      `${at}: visudo rejected the sudoers rule (${stderr}); correct host.${host.name}.sudo-commands`,
      'SudoersRejected',
    );
  }
  throw ApplicationFailure.retryable(
    `${at}: exit ${result.code}: ${stderr || 'no output'}; retrying`,
    'SshCommandFailed',
  );
}

/** Runs one fixed script as root on the host. Everything is validated before the host is contacted. */
async function runScript(
  deps: SshDeps,
  host: HostRef,
  { script, args }: RemoteScript,
  action: string,
  timeoutMs: number,
  options: SshOptions = {},
): Promise<string> {
  forHost(host, () => checkAdminUser(host.user));
  const command = remoteCommand(args);
  const hostKey = await deps.hostKeys.target({
    host: host.name,
    address: host.address,
    port: host.port,
    ...(host.hostKey && { hostKey: host.hostKey }),
  });
  const privateKey = await deps.adminKey(host.secret);
  const target = { address: host.address, port: host.port, user: host.user, privateKey };
  let result: ExecResult;
  try {
    result = await withSsh(
      { ...target, ...hostKey },
      (ssh) => ssh.exec(command, { stdin: script, timeoutMs }),
      options,
    );
  } catch (err) {
    throw classifySshError(err, sshContext(host));
  }
  checkResult(result, host, action);
  return result.stdout;
}

/**
 * Creates the TaskRun's build user on the host, fresh (a stale one of that name is removed
 * first), with a new ed25519 key as its only authorized key, its build directory and its sudo
 * rule, if any. A rerun replaces the user. Call it from the activity that also stores the key in
 * the OTP service.
 */
export async function provisionBuildUser(
  deps: SshDeps,
  input: BuildUserInput,
  options: SshOptions = {},
): Promise<ProvisionedUser> {
  const user = buildUserName(input.taskRun);
  const { privateKey, publicKey } = generateBuildUserKey(user);
  const script = forHost(input.host, () =>
    provisionScript(user, publicKey, input.host.sudoCommands ?? []),
  );
  await runScript(deps, input.host, script, `provision ${user}`, PROVISION_TIMEOUT_MS, options);
  return { user, userDir: buildDir(user), privateKey };
}

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // called outside an activity (tests, scripts)
  }
}

/** Heartbeats while `fn` runs, when inside an activity, and hands it the cancellation signal. */
async function heartbeating<T>(fn: (options: SshOptions) => Promise<T>): Promise<T> {
  const ctx = activityContext();
  if (!ctx) return fn({});
  const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
  try {
    return await fn({ signal: ctx.cancellationSignal });
  } catch (err) {
    // cancelled: report it as such (a CancelledFailure), not as the closed connection it caused
    throw ctx.cancellationSignal.aborted ? (ctx.cancellationSignal.reason ?? err) : err;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Removes the build user with everything it owns on the host: processes, home, files in the
 * shared temporary directories, sudo rule. `minAgeSeconds` spares a user created that recently
 * (`young`): garbage collection must not race a provisioning. Idempotent.
 */
export async function removeBuildUser(
  deps: SshDeps,
  host: HostRef,
  user: string,
  options: SshOptions & { minAgeSeconds?: number } = {},
): Promise<'removed' | 'absent' | 'young'> {
  const script = forHost(host, () => removeScript(user, options.minAgeSeconds));
  const out = await runScript(deps, host, script, `remove ${user}`, REMOVE_TIMEOUT_MS, options);
  const outcome = out.trim().split('\n').pop();
  if (outcome === 'removed' || outcome === 'absent' || outcome === 'young') return outcome;
  throw ApplicationFailure.retryable(
    `ssh host ${host.name}: removing ${user} printed ${JSON.stringify(tail(out))}`,
    'SshCommandFailed',
  );
}

/** The build users on the host, with how long ago each was created (when it is known). */
export async function listBuildUsers(
  deps: SshDeps,
  host: HostRef,
  options: SshOptions = {},
): Promise<Array<{ user: string; ageSeconds?: number }>> {
  const out = await runScript(
    deps,
    host,
    listScript(),
    'list build users',
    LIST_TIMEOUT_MS,
    options,
  );
  return parseBuildUserList(out);
}

/** The user to remove for `input` (see RemoveBuildUserInput). */
export function userToRemove(input: RemoveBuildUserInput): string {
  if (input.user) return forHost(input.host, () => checkBuildUser(input.user!));
  if (input.taskRun) return buildUserName(input.taskRun);
  if (input.namespace !== undefined && input.taskRunName !== undefined) {
    return legacyBuildUserName(input.namespace, input.taskRunName);
  }
  throw ApplicationFailure.nonRetryable('removeBuildUser needs a user or a TaskRun', 'BadInput');
}

export function createSshActivities(deps: SshDeps) {
  return {
    /** Kills the build user's processes, removes it and everything it owns. Idempotent. */
    async removeBuildUser(input: RemoveBuildUserInput): Promise<'removed' | 'absent'> {
      const user = userToRemove(input);
      const outcome = await heartbeating((options) =>
        removeBuildUser(deps, input.host, user, options),
      );
      return outcome === 'young' ? 'removed' : outcome; // no minimum age here: never young
    },

    /**
     * Whether the admin can log in and use sudo: the check that re-admits an unhealthy host.
     * Host problems answer `ok: false`; a retryable failure to read the admin key is thrown,
     * since it says nothing about the host.
     */
    async probeHost(input: { host: HostRef }): Promise<{ ok: boolean; detail: string }> {
      const { host } = input;
      try {
        forHost(host, () => checkAdminUser(host.user));
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
      const adminKey = await deps.adminKey(host.secret).catch((err: unknown) => {
        if (err instanceof ApplicationFailure && err.nonRetryable) return err;
        throw err;
      });
      if (adminKey instanceof ApplicationFailure) return { ok: false, detail: adminKey.message };
      // the script runs under `sudo -n bash`, so reaching `true` proves login and sudo both work
      const probe = { script: 'true\n', args: [] };
      try {
        await heartbeating((options) =>
          runScript(
            { ...deps, adminKey: async () => adminKey },
            host,
            probe,
            'sudo -n true',
            30_000,
            options,
          ),
        );
        return {
          ok: true,
          detail: `${host.user}@${host.address}: login and passwordless sudo work`,
        };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
  };
}

export type SshActivities = ReturnType<typeof createSshActivities>;
