// Runs a kubespray playbook (cluster.yml, scale.yml, remove-node.yml, reset.yml, and an
// operation's upgrade-cluster.yml) against a Provisioning's inventory: ansible-playbook -i <dir>/inventory.ini <kubespray>/<playbook>
// --become. Heartbeats with the play and task it is at; a failure names the host and the task.
//
// Never two runs for one cluster at once: the run holds an exclusive flock on the cluster's
// directory, and runs with a parent-death signal, so a worker killed mid-run takes its
// ansible-playbook with it before the retried activity starts another. The full log stays in
// the cluster's directory for operators. The SSH key is written there only for the run.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  ansibleCoreVersion,
  chooseCheckout,
  readCheckout,
  type KubesprayCheckout,
} from './kubespray-release.js';
import type { Playbook, ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { ansibleEnvironment } from './environment.js';
import { knownHostsFor } from './known-hosts.js';
import { PlaybookProgress, type HostRecap } from './progress.js';
import type { HostKeys } from '../ssh/host-keys.js';
import type { GivenHostKey } from '../../platform-config/host-key.js';

export interface PlaybookDeps {
  /** The ansible-playbook command. */
  ansiblePlaybook: string;
  /**
   * The kubespray checkouts the worker can run (or the tests' stand-in): the first serves a
   * Provisioning that pins no release.
   */
  kubesprayDirs: string[];
  /** Where each cluster's directory lives: <workDir>/<namespace>/<cluster>. */
  workDir: string;
  /** The installer's private SSH key, from its Secret (key id_rsa) in `namespace`. */
  readKey(namespace: string, secretName: string): Promise<string>;
  /** Stores artifacts/admin.conf; returns the Secret's name. */
  storeKubeconfig(input: {
    namespace: string;
    cluster: string;
    kubeconfig: string;
    server: string;
    owner: ProvisioningRef;
  }): Promise<string>;
  /** Checks the hosts' keys before ansible runs (activities/ssh/host-keys.ts). */
  hostKeys: HostKeys;
}

export interface PlaybookInput {
  namespace: string;
  cluster: string;
  playbook: Playbook;
  inventory: string;
  groupVars: string;
  sshUser: string;
  sshKeySecret: string;
  /**
   * Only these nodes: `--limit` for scale.yml, the `node` variable for remove-node.yml (which
   * must still reach the control plane to drain and delete them), as kubespray's docs run them.
   */
  limit?: string[];
  /** The first control plane's IP: the stored kubeconfig's server. */
  controlPlaneIp?: string;
  /** The Provisioning it runs for: the stored kubeconfig is marked as its, and only its replaced. */
  owner?: ProvisioningRef;
  /** The kubespray release the Provisioning pins (`v2.31.0`); the worker's first when unset. */
  kubesprayRelease?: string;
  /** Host keys the nodes were given (their BareMetalHosts'), by address: no first use for them. */
  hostKeys?: Record<string, GivenHostKey>;
  /**
   * A ClusterOperation's variables (`kube_version`…), checked by checkOperationSpec: plain JSON
   * values, no name hostflow sets itself. Passed with the run's own in one JSON argument.
   */
  extraVars?: Record<string, unknown>;
  /** A dry run (`--check`): nothing changes on the hosts; the recap says what would. */
  check?: boolean;
}

export interface KubesprayCheck {
  /** The release that will run (`2.31.0`), when the checkout names one. */
  release?: string;
  /** Why none can run: the release is not installed, or needs another ansible-core. */
  problem?: string;
}

export interface PlaybookOutcome {
  recap: Record<string, HostRecap>;
  /** The run's full log, on the worker that ran it. */
  log: string;
  kubeconfigSecret?: string;
}

const HEARTBEAT_MS = 5_000;
/** flock's exit code when another run holds the cluster's lock. */
const LOCKED = 75;
/** A cancelled run has this long to stop on SIGTERM before it is killed. */
const CANCEL_GRACE_MS = 10_000;

export function createPlaybookActivities(deps: PlaybookDeps) {
  let ansibleCore: Promise<string> | undefined;
  /** The checkout for `release`, or why there is none; ansible-core is asked once per process. */
  const choose = async (release: string | undefined) => {
    ansibleCore ??= ansibleCoreVersion(deps.ansiblePlaybook).catch((err: unknown) => {
      ansibleCore = undefined;
      throw err;
    });
    return chooseCheckout(deps.kubesprayDirs.map(readCheckout), release, await ansibleCore);
  };
  return {
    /** Whether a Provisioning's kubespray release can run here, asked before any host is touched. */
    async checkKubespray(input: { release?: string }): Promise<KubesprayCheck> {
      const chosen = await choose(input.release);
      if ('problem' in chosen) return { problem: chosen.problem };
      return chosen.checkout.version ? { release: chosen.checkout.version } : {};
    },

    async runPlaybook(input: PlaybookInput): Promise<PlaybookOutcome> {
      const chosen = await choose(input.kubesprayRelease);
      if ('problem' in chosen) {
        throw ApplicationFailure.nonRetryable(chosen.problem, 'KubesprayUnavailable');
      }
      const dir = join(deps.workDir, input.namespace, input.cluster);
      mkdirSync(join(dir, 'group_vars'), { recursive: true, mode: 0o700 });
      // This run's own files until it holds the lock: a run refused as busy touches nothing in use.
      const run = randomUUID().slice(0, 8);
      const inventory = join(dir, `inventory.${run}.ini`);
      writeFileSync(inventory, input.inventory);
      writeFileSync(join(dir, 'group_vars', 'k8s_cluster.yml'), input.groupVars);
      const keyFile = join(dir, `.ssh-key.${run}`);
      const log = join(dir, `${input.playbook.replace(/\.yml$/, '')}.${run}.log`);
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
        code = await runAnsible(
          deps.ansiblePlaybook,
          chosen.checkout,
          input,
          { dir, inventory, keyFile, knownHosts, log },
          progress,
          (what) => context.heartbeat(what), // the SDK throttles what it sends
          context.cancellationSignal,
        );
      } finally {
        clearInterval(beat);
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
          `another ${input.playbook} run for cluster ${input.cluster} is still going; waiting for it`,
          'PlaybookBusy',
        );
      }
      if (code !== 0) {
        const failure = progress.failures[0];
        const where = failure
          ? `${failure.kind} on host ${failure.host} at task "${failure.task}": ${failure.message}`
          : `exited with code ${code} at ${progress.describe() || 'start'}`;
        throw ApplicationFailure.create({
          message: `kubespray ${input.playbook} ${where} (log: ${log})`,
          type: 'PlaybookFailed',
          nonRetryable: true,
          details: [{ failedHost: failure?.host, failedTask: failure?.task, log }],
        });
      }
      const outcome: PlaybookOutcome = { recap: progress.recap, log };
      const adminConf = join(dir, 'artifacts', 'admin.conf');
      const { controlPlaneIp, owner } = input;
      if (input.playbook !== 'reset.yml' && controlPlaneIp && owner && existsSync(adminConf)) {
        outcome.kubeconfigSecret = await deps.storeKubeconfig({
          owner,
          namespace: input.namespace,
          cluster: input.cluster,
          kubeconfig: await readFile(adminConf, 'utf8'),
          server: `https://${controlPlaneIp}:6443`,
        });
      }
      return outcome;
    },
  };
}

export type PlaybookActivities = ReturnType<typeof createPlaybookActivities>;

/** kubespray's reset.yml and remove-node.yml ask "are you sure?"; nobody is there to answer. */
const ASKS_FIRST: readonly Playbook[] = ['reset.yml', 'remove-node.yml'];

/** The per-playbook arguments: which nodes, and the confirmation a prompt would wait for. */
function playbookVars(input: PlaybookInput): string[] {
  const nodes = input.limit ?? [];
  const vars: Record<string, unknown> = { ...input.extraVars };
  if (ASKS_FIRST.includes(input.playbook)) vars.skip_confirmation = true;
  if (input.playbook === 'remove-node.yml' && nodes.length) vars.node = nodes.join(',');
  const limit = input.playbook !== 'remove-node.yml' && nodes.length;
  return [
    ...(input.check ? ['--check'] : []),
    ...(limit ? ['--limit', nodes.join(',')] : []),
    // JSON in one argument (no shell): labels were checked, and quoting cannot go wrong.
    ...(Object.keys(vars).length ? ['--extra-vars', JSON.stringify(vars)] : []),
  ];
}

function runAnsible(
  ansiblePlaybook: string,
  kubespray: KubesprayCheckout,
  input: PlaybookInput,
  files: { dir: string; inventory: string; keyFile: string; knownHosts: string; log: string },
  progress: PlaybookProgress,
  onProgress: (what: string) => void,
  cancelled: AbortSignal,
): Promise<number | null> {
  const { dir, inventory, keyFile, knownHosts, log } = files;
  const args = [
    '--pdeathsig',
    'KILL',
    '--',
    'flock',
    '--no-fork',
    '--nonblock',
    '--conflict-exit-code',
    String(LOCKED),
    join(dir, '.run.lock'),
    ansiblePlaybook,
    '-i',
    inventory,
    join(kubespray.dir, input.playbook),
    '--become',
    '--user',
    input.sshUser,
    '--private-key',
    keyFile,
    ...playbookVars(input),
  ];
  // Its own process group: a cancel stops ansible-playbook and the forks that run each host's
  // task, which hold its output open until their task ends (a slow one, for minutes).
  const child = spawn('setpriv', args, {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...ansibleEnvironment(process.env),
      ...kubesprayConfig(kubespray.dir, dir),
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_FORCE_COLOR: '0',
      ANSIBLE_RETRY_FILES_ENABLED: '0',
      // Only the keys hostflow checked for this run (known-hosts.ts); nothing trusted on first use.
      ANSIBLE_SSH_ARGS: `-o UserKnownHostsFile=${knownHosts} -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes`,
      ANSIBLE_LOCAL_TEMP: join(dir, '.ansible-tmp'),
      ANSIBLE_PYTHON_INTERPRETER: 'auto_silent',
    },
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
    child.on('error', (err) => reject(new Error(`cannot run ansible-playbook: ${err.message}`)));
    child.on('close', (code) => {
      clearTimeout(kill);
      cancelled.removeEventListener('abort', onCancel);
      out.end(() => resolve(code));
    });
  });
}

/**
 * kubespray's own ansible.cfg, which finds its roles, library and plugins, as running from its
 * directory would; with what it sets for one operator's laptop overridden for a shared worker:
 * facts cached per cluster (not in /tmp, across tenants), and host keys checked (it turns that off).
 */
function kubesprayConfig(kubesprayDir: string, clusterDir: string): Record<string, string> {
  const config = join(kubesprayDir, 'ansible.cfg');
  return {
    ...(existsSync(config) ? { ANSIBLE_CONFIG: config } : {}),
    ANSIBLE_CACHE_PLUGIN_CONNECTION: join(clusterDir, '.facts'),
    ANSIBLE_HOST_KEY_CHECKING: 'True',
  };
}

const ensureNewline = (key: string) => (key.endsWith('\n') ? key : `${key}\n`);
