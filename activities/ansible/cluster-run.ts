// One run of ansible (kubespray, or a tenant's own action) for a cluster, as a runner Job of its
// own (activities/runner): the worker renders the run's bundle fresh (the inventory, the engine's
// group vars, a known_hosts of exactly the keys hostflow checked, the installer key) and follows
// the run's log. Heartbeats with the play and task it is at; a failure names the host and the
// task, or the limit the run hit. Nothing runs on the worker, and nothing a run wrote is read
// back but its log, through the API, with caps. The worker keeps its own copy of the log.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import { inventoryNodes, type Inventory } from '../../shared/inventory.js';
import type { Runner } from '../runner/job.js';
import { BUNDLE_DIR, runName, type RunRequest } from '../runner/manifests.js';
import type { HostKeys } from '../ssh/host-keys.js';
import { inventoryText } from './inventory-file.js';
import { knownHostsFor, nodesByAddress } from './known-hosts.js';
import { PlaybookProgress } from './progress.js';

export interface ClusterRunDeps {
  /** Where the worker keeps runs' logs: <workDir>/.logs/<namespace>/<cluster>. */
  workDir: string;
  /** The installer's private SSH key, from its Secret (key id_rsa) in `namespace`. */
  readKey(namespace: string, secretName: string): Promise<string>;
  /** Checks the hosts' keys before anything runs (activities/ssh/host-keys.ts). */
  hostKeys: HostKeys;
  runner: Runner;
  /** Every run's activeDeadlineSeconds (RunnerSettings). */
  deadlineSeconds: number;
}

/** The cluster a run is for, and how it reaches the nodes. */
export interface ClusterRunInput {
  namespace: string;
  cluster: string;
  inventory: Inventory;
  groupVars: string;
  sshUser: string;
  sshKeySecret: string;
  /** Host keys the nodes were given (their BareMetalHosts'), by address: no first use for them. */
  hostKeys?: Record<string, GivenHostKey>;
}

/** Where the bundle's files are, as the run's command sees them. */
export const BUNDLE = {
  inventory: `${BUNDLE_DIR}/inventory.ini`,
  knownHosts: `${BUNDLE_DIR}/known_hosts`,
  keyFile: `${BUNDLE_DIR}/ssh/id_key`,
  file: (path: string) => `${BUNDLE_DIR}/${path}`,
};

export interface RunHow {
  /** The log's name: `<name>.<run>.log`. */
  name: string;
  /** What runs, as failures say it: `kubespray cluster.yml`. */
  what: string;
  command: string[];
  env: Record<string, string>;
  /** More files for the bundle (the tenant's action, an ssh_config), under BUNDLE_DIR. */
  files?: RunRequest['files'];
}

const HEARTBEAT_MS = 5_000;

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

/** A dry run, and a run's variables from the bundle (no shell, so quoting cannot go wrong). */
export function runVars(check: boolean | undefined, varsFile: string | undefined): string[] {
  return [...(check ? ['--check'] : []), ...(varsFile ? ['--extra-vars', `@${varsFile}`] : [])];
}

/** Runs `how` for the cluster as a Job; its progress and log once it exited 0, else a failure. */
export async function runInCluster(
  deps: ClusterRunDeps,
  input: ClusterRunInput,
  how: RunHow,
): Promise<{ log: string; progress: PlaybookProgress }> {
  const context = Context.current();
  const { workflowExecution: run, activityId } = context.info;
  // From the run, not the attempt: a retry after a worker was lost finds its Job again.
  const name = runName(`${run?.workflowId}/${run?.runId}/${activityId}`);
  const privateKey = ensureNewline(await deps.readKey(input.namespace, input.sshKeySecret));
  const nodes = inventoryNodes(input.inventory);
  const knownHosts = await knownHostsFor(
    deps.hostKeys,
    nodes,
    { user: input.sshUser, privateKey },
    input.hostKeys,
  );
  const request: RunRequest = {
    name,
    cluster: `${input.namespace}/${input.cluster}`,
    what: how.what,
    command: how.command,
    env: how.env,
    files: [
      { path: 'inventory.ini', content: inventoryText(input.inventory) },
      { path: 'group_vars/k8s_cluster.yml', content: input.groupVars },
      { path: 'known_hosts', content: knownHosts },
      { path: 'ssh/id_key', content: privateKey, mode: 0o400 },
      ...(how.files ?? []),
    ],
    nodeAddresses: nodesByAddress(nodes).map((host) => host.address),
    deadlineSeconds: deps.deadlineSeconds,
  };
  const log = openLog(deps.workDir, input, how.name);
  const progress = new PlaybookProgress();
  let described = '';
  const onLine = (line: string) => {
    writeSync(log.fd, `${line}\n`);
    progress.feed(line);
    const now = progress.describe();
    if (now !== described) context.heartbeat((described = now)); // the SDK throttles what it sends
  };
  const beat = setInterval(() => context.heartbeat(progress.describe()), HEARTBEAT_MS);
  let end;
  try {
    end = await deps.runner.run(request, onLine, context.cancellationSignal);
  } finally {
    clearInterval(beat);
    closeSync(log.fd);
  }
  // Stopped because the run was cancelled: that is the outcome, not the exit code it left.
  context.cancellationSignal.throwIfAborted();
  if (end.limit) {
    throw ApplicationFailure.create({
      message: `${how.what} ${end.limit}, at ${progress.describe() || 'start'} (log: ${log.path})`,
      type: 'RunLimit',
      nonRetryable: true,
      details: [{ log: log.path }],
    });
  }
  if (end.exitCode !== 0) {
    const failure = progress.failures[0];
    const where = failure
      ? `${failure.kind} on host ${failure.host} at task "${failure.task}": ${failure.message}`
      : `exited with code ${end.exitCode} at ${progress.describe() || 'start'}`;
    throw ApplicationFailure.create({
      message: `${how.what} ${where} (log: ${log.path})`,
      type: 'PlaybookFailed',
      nonRetryable: true,
      details: [{ failedHost: failure?.host, failedTask: failure?.task, log: log.path }],
    });
  }
  return { log: log.path, progress };
}

/**
 * The worker's copy of a run's log, in a folder only the worker writes (runs write nothing on the
 * worker). Opened exclusively: a name that exists, or a link, is never written through.
 */
function openLog(workDir: string, input: ClusterRunInput, name: string) {
  const dir = join(workDir, '.logs', input.namespace, input.cluster);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${name}.${randomUUID().slice(0, 8)}.log`);
  return { path, fd: openSync(path, 'wx', 0o600) };
}

const ensureNewline = (key: string) => (key.endsWith('\n') ? key : `${key}\n`);
