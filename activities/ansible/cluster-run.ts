// One run of ansible (or a custom action) for a cluster, in the cluster's directory on the worker:
// the inventory, the installer key written only for the run, and a known_hosts of the keys hostflow
// checked. Heartbeats with the play and task it is at; a failure names the host and the task.
//
// Never two runs for one cluster at once: the run holds an exclusive flock on the cluster's
// directory, and runs with a parent-death signal, so a worker killed mid-run takes its run with
// it before the retried activity starts another. The full log stays in the cluster's directory.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import type { HostKeys } from '../ssh/host-keys.js';
import { knownHostsFor } from './known-hosts.js';
import { PlaybookProgress } from './progress.js';

export interface ClusterRunDeps {
  /** Where each cluster's directory lives: <workDir>/<namespace>/<cluster>. */
  workDir: string;
  /** The installer's private SSH key, from its Secret (key id_rsa) in `namespace`. */
  readKey(namespace: string, secretName: string): Promise<string>;
  /** Checks the hosts' keys before anything runs (activities/ssh/host-keys.ts). */
  hostKeys: HostKeys;
}

/** The cluster a run is for, and how it reaches the nodes. */
export interface ClusterRunInput {
  namespace: string;
  cluster: string;
  inventory: string;
  groupVars: string;
  sshUser: string;
  sshKeySecret: string;
  /** Host keys the nodes were given (their BareMetalHosts'), by address: no first use for them. */
  hostKeys?: Record<string, GivenHostKey>;
}

/** This run's files in the cluster's directory. */
export interface RunFiles {
  dir: string;
  run: string;
  inventory: string;
  keyFile: string;
  knownHosts: string;
  log: string;
}

export interface RunHow {
  /** The log's name: `<name>.<run>.log`. */
  name: string;
  /** What runs, as failures say it: `kubespray cluster.yml`. */
  what: string;
  /** The command (run under the cluster's lock) and its whole environment. */
  command(files: RunFiles):
    | { args: string[]; env: Record<string, string> }
    | Promise<{
        args: string[];
        env: Record<string, string>;
      }>;
  /** Called when the run has ended, however it ended. */
  after?(): Promise<void>;
}

const HEARTBEAT_MS = 5_000;
/** flock's exit code when another run holds the cluster's lock. */
const LOCKED = 75;
/** A cancelled run has this long to stop on SIGTERM before it is killed. */
const CANCEL_GRACE_MS = 10_000;

/** ansible's output as the progress parser reads it. */
export const ANSIBLE_QUIET = {
  ANSIBLE_NOCOLOR: '1',
  ANSIBLE_FORCE_COLOR: '0',
  ANSIBLE_RETRY_FILES_ENABLED: '0',
  ANSIBLE_PYTHON_INTERPRETER: 'auto_silent',
};

/**
 * How ssh checks the nodes' keys on every run: only against the keys hostflow checked for it
 * (known-hosts.ts), nothing trusted on first use. As ssh_config's `[option, value]` pairs.
 */
export function checkedHostKeys(knownHosts: string): Array<[string, string]> {
  return [
    ['UserKnownHostsFile', knownHosts],
    ['GlobalKnownHostsFile', '/dev/null'],
    ['StrictHostKeyChecking', 'yes'],
  ];
}

/** The same options on ssh's command line (ANSIBLE_SSH_ARGS). */
export const sshArgs = (options: Array<[string, string]>): string =>
  options.map(([name, value]) => `-o ${name}=${value}`).join(' ');

/** A dry run, and a run's variables in one JSON argument (no shell, so quoting cannot go wrong). */
export function runVars(check: boolean | undefined, vars: Record<string, unknown>): string[] {
  return [
    ...(check ? ['--check'] : []),
    ...(Object.keys(vars).length ? ['--extra-vars', JSON.stringify(vars)] : []),
  ];
}

/** Runs `how` for the cluster; its progress and log once it exited 0, else a failure. */
export async function runInCluster(
  deps: ClusterRunDeps,
  input: ClusterRunInput,
  how: RunHow,
): Promise<{ dir: string; log: string; progress: PlaybookProgress }> {
  const dir = join(deps.workDir, input.namespace, input.cluster);
  mkdirSync(join(dir, 'group_vars'), { recursive: true, mode: 0o700 });
  // This run's own files until it holds the lock: a run refused as busy touches nothing in use.
  const run = randomUUID().slice(0, 8);
  const inventory = join(dir, `inventory.${run}.ini`);
  writeFileSync(inventory, input.inventory);
  writeFileSync(join(dir, 'group_vars', 'k8s_cluster.yml'), input.groupVars);
  const keyFile = join(dir, `.ssh-key.${run}`);
  const log = join(dir, `${how.name}.${run}.log`);
  const knownHosts = join(dir, `known_hosts.${run}`);
  const progress = new PlaybookProgress();
  const context = Context.current();
  const privateKey = ensureNewline(await deps.readKey(input.namespace, input.sshKeySecret));
  try {
    const login = { user: input.sshUser, privateKey };
    writeFileSync(
      knownHosts,
      await knownHostsFor(deps.hostKeys, input.inventory, login, input.hostKeys),
    );
  } catch (err) {
    rmSync(inventory, { force: true });
    throw err;
  }
  writeFileSync(keyFile, privateKey, { mode: 0o600 });
  let code: number | null | undefined;
  const beat = setInterval(() => context.heartbeat(progress.describe()), HEARTBEAT_MS);
  try {
    const command = await how.command({ dir, run, inventory, keyFile, knownHosts, log });
    code = await runLocked(
      dir,
      command,
      log,
      progress,
      (what) => context.heartbeat(what), // the SDK throttles what it sends
      context.cancellationSignal,
    );
  } finally {
    clearInterval(beat);
    await how.after?.();
    rmSync(keyFile, { force: true });
    rmSync(knownHosts, { force: true });
    // The inventory of the last run that ran is the one operators find as inventory.ini.
    if (code! !== LOCKED) renameSync(inventory, join(dir, 'inventory.ini'));
    else rmSync(inventory, { force: true });
  }
  // Stopped because the run was cancelled: that is the outcome, not the exit code it left.
  context.cancellationSignal.throwIfAborted();
  if (code === LOCKED) {
    throw ApplicationFailure.retryable(
      `another run for cluster ${input.cluster} is still going; ${how.what} waits for it`,
      'PlaybookBusy',
    );
  }
  if (code !== 0) {
    const failure = progress.failures[0];
    const where = failure
      ? `${failure.kind} on host ${failure.host} at task "${failure.task}": ${failure.message}`
      : `exited with code ${code} at ${progress.describe() || 'start'}`;
    throw ApplicationFailure.create({
      message: `${how.what} ${where} (log: ${log})`,
      type: 'PlaybookFailed',
      nonRetryable: true,
      details: [{ failedHost: failure?.host, failedTask: failure?.task, log }],
    });
  }
  return { dir, log, progress };
}

/** Runs `command` holding the cluster's lock: its exit code, or LOCKED when another run holds it. */
function runLocked(
  dir: string,
  command: { args: string[]; env: Record<string, string> },
  log: string,
  progress: PlaybookProgress,
  onProgress: (what: string) => void,
  cancelled: AbortSignal,
): Promise<number | null> {
  const args = [
    ...['--pdeathsig', 'KILL', '--', 'flock', '--no-fork', '--nonblock'],
    ...['--conflict-exit-code', String(LOCKED), join(dir, '.run.lock')],
    ...command.args,
  ];
  // Its own process group: a cancel stops ansible-playbook and the forks that run each host's
  // task, which hold its output open until their task ends (a slow one, for minutes).
  const child = spawn('setpriv', args, {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: command.env,
  });
  const out = createWriteStream(log, { flags: 'w' });
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    out.write(`${line}\n`);
    const before = progress.describe();
    progress.feed(line);
    if (progress.describe() !== before) onProgress(progress.describe());
  });
  child.stderr.on('data', (chunk: Buffer) => out.write(chunk));
  const signalRun = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      // the run has ended meanwhile
    }
  };
  let kill: NodeJS.Timeout | undefined;
  const onCancel = () => {
    signalRun('SIGTERM');
    kill = setTimeout(() => signalRun('SIGKILL'), CANCEL_GRACE_MS);
  };
  cancelled.addEventListener('abort', onCancel);
  return new Promise((resolve, reject) => {
    child.on('error', (err) => reject(new Error(`cannot run ${command.args[0]}: ${err.message}`)));
    child.on('close', (code) => {
      clearTimeout(kill);
      cancelled.removeEventListener('abort', onCancel);
      out.end(() => resolve(code));
    });
  });
}

const ensureNewline = (key: string) => (key.endsWith('\n') ? key : `${key}\n`);
