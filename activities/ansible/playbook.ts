// Runs a kubespray playbook (cluster.yml, scale.yml, remove-node.yml, reset.yml, and an
// operation's upgrade-cluster.yml) against a Provisioning's inventory, in the cluster's directory
// (cluster-run.ts): ansible-playbook -i <inventory> <kubespray>/<playbook> --become. And a
// ClusterOperation's custom action (a tenant's playbook or shell script), in the sandbox.
import { ApplicationFailure } from '@temporalio/common';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ansibleCoreVersion, chooseCheckout, readCheckout } from './kubespray-release.js';
import type { Playbook, ProvisioningRef } from '../../shared/contracts/provisioning.js';
import {
  ANSIBLE_QUIET,
  checkedHostKeys,
  runInCluster,
  runVars,
  sshArgs,
  type ClusterRunDeps,
} from './cluster-run.js';
import { customActionCommand, type CustomAction } from './custom-action.js';
import { ansibleEnvironment } from './environment.js';
import type { HostRecap } from './progress.js';
import { sandboxProblem } from './sandbox.js';
import type { GivenHostKey } from '../../platform-config/host-key.js';

export interface PlaybookDeps extends ClusterRunDeps {
  /** The ansible-playbook command. */
  ansiblePlaybook: string;
  /**
   * The kubespray checkouts the worker can run (or the tests' stand-in): the first serves a
   * Provisioning that pins no release.
   */
  kubesprayDirs: string[];
  /** Stores artifacts/admin.conf; returns the Secret's name. */
  storeKubeconfig(input: {
    namespace: string;
    cluster: string;
    kubeconfig: string;
    server: string;
    owner: ProvisioningRef;
  }): Promise<string>;
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

/** A ClusterOperation's custom action, run on its cluster's nodes. */
export type CustomActionInput = Omit<PlaybookInput, 'playbook' | 'limit' | 'controlPlaneIp'> & {
  action: CustomAction;
};

export function createPlaybookActivities(deps: PlaybookDeps) {
  let ansibleCore: Promise<string> | undefined;
  let sandbox: Promise<string | undefined> | undefined;
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
      const kubespray = chosen.checkout;
      const { dir, log, progress } = await runInCluster(deps, input, {
        name: input.playbook.replace(/\.yml$/, ''),
        what: `kubespray ${input.playbook}`,
        command: (files) => ({
          args: [
            deps.ansiblePlaybook,
            '-i',
            files.inventory,
            join(kubespray.dir, input.playbook),
            '--become',
            '--user',
            input.sshUser,
            '--private-key',
            files.keyFile,
            ...playbookVars(input),
          ],
          env: {
            ...ansibleEnvironment(process.env),
            ...kubesprayConfig(kubespray.dir, files.dir),
            ...ANSIBLE_QUIET,
            ANSIBLE_SSH_ARGS: sshArgs(checkedHostKeys(files.knownHosts)),
            ANSIBLE_LOCAL_TEMP: join(files.dir, '.ansible-tmp'),
          },
        }),
      });
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

    /**
     * Runs a tenant's own playbook or shell script on its cluster's nodes, in the sandbox
     * (sandbox.ts): nothing on the worker but its cluster's directory, no network but its nodes.
     */
    async runCustomAction(input: CustomActionInput): Promise<PlaybookOutcome> {
      sandbox ??= sandboxProblem();
      const problem = await sandbox;
      if (problem) throw ApplicationFailure.nonRetryable(problem, 'SandboxUnavailable');
      const { action } = input;
      let close: (() => Promise<void>) | undefined;
      const { log, progress } = await runInCluster(deps, input, {
        name: `custom-${action.key.replace(/[^-_a-zA-Z0-9]/g, '_')}`,
        what: `${action.type} ${action.key} (ConfigMap ${action.configMap})`,
        command: async (files) => {
          const command = await customActionCommand(deps.ansiblePlaybook, input, files);
          close = command.close;
          return command;
        },
        after: async () => close?.(),
      });
      return { recap: progress.recap, log };
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
  return [...(limit ? ['--limit', nodes.join(',')] : []), ...runVars(input.check, vars)];
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
