// Runs a kubespray playbook (cluster.yml, scale.yml, remove-node.yml, reset.yml, and an
// operation's upgrade-cluster.yml) against a Provisioning's inventory, and a ClusterOperation's
// custom action (a tenant's playbook or shell script): each as a runner Job of its own
// (cluster-run.ts). The admin kubeconfig is fetched from the first control plane over the
// engine's checked SSH, never from anything the run wrote.
import { ApplicationFailure } from '@temporalio/common';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { chooseCheckout, readCheckout } from './kubespray-release.js';
import type { Playbook, ProvisioningRef } from '../../shared/contracts/provisioning.js';
import {
  ANSIBLE_QUIET,
  BUNDLE,
  checkedHostKeys,
  runInCluster,
  runVars,
  sshArgs,
  type ClusterRunDeps,
} from './cluster-run.js';
import { customActionRun, type CustomAction } from './custom-action.js';
import type { HostRecap } from './progress.js';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import { inventoryNodes, type Inventory } from '../../shared/inventory.js';
import { RUNNER_KUBESPRAY_DIR } from '../runner/manifests.js';

export interface PlaybookDeps extends ClusterRunDeps {
  /** The runner image's ansible-core, checked against each kubespray release. */
  ansibleCore: string;
  /**
   * The kubespray checkouts the worker can run (or the tests' stand-in): the first serves a
   * Provisioning that pins no release.
   */
  kubesprayDirs: string[];
  /** The admin kubeconfig from the first control plane, over the engine's checked SSH. */
  fetchKubeconfig(input: {
    namespace: string;
    address: string;
    user: string;
    sshKeySecret: string;
    hostKeys?: Record<string, GivenHostKey>;
  }): Promise<string | undefined>;
  /** Stores the admin kubeconfig; returns the Secret's name. */
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
  inventory: Inventory;
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
  /** Only the tasks with these tags (`--tags`): the tests run real kubespray's `always` ones. */
  tags?: string[];
}

export interface KubesprayCheck {
  /** The release that will run (`2.31.0`), when the checkout names one. */
  release?: string;
  /** Why none can run: the release is not installed, or needs another ansible-core. */
  problem?: string;
}

export interface PlaybookOutcome {
  recap: Record<string, HostRecap>;
  /** The worker's copy of the run's log. */
  log: string;
  kubeconfigSecret?: string;
}

/** A ClusterOperation's custom action, run on its cluster's nodes. */
export type CustomActionInput = Omit<PlaybookInput, 'playbook' | 'limit' | 'controlPlaneIp'> & {
  action: CustomAction;
};

export function createPlaybookActivities(deps: PlaybookDeps) {
  /** The checkout for `release`, or why there is none. */
  const choose = (release: string | undefined) =>
    chooseCheckout(deps.kubesprayDirs.map(readCheckout), release, deps.ansibleCore);
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
      const kubespray = join(RUNNER_KUBESPRAY_DIR, basename(chosen.checkout.dir));
      const { log, progress } = await runInCluster(deps, input, {
        name: input.playbook.replace(/\.yml$/, ''),
        what: `kubespray ${input.playbook}`,
        command: [
          'ansible-playbook',
          '-i',
          BUNDLE.inventory,
          join(kubespray, input.playbook),
          '--become',
          '--user',
          input.sshUser,
          '--private-key',
          BUNDLE.keyFile,
          ...playbookArgs(input),
        ],
        env: {
          ...ANSIBLE_QUIET,
          ...kubesprayConfig(kubespray, existsSync(join(chosen.checkout.dir, 'ansible.cfg'))),
          ANSIBLE_SSH_ARGS: sshArgs(checkedHostKeys(BUNDLE.knownHosts)),
        },
        files: varsFile(playbookVars(input)),
      });
      const outcome: PlaybookOutcome = { recap: progress.recap, log };
      const { controlPlaneIp, owner } = input;
      if (input.playbook !== 'reset.yml' && controlPlaneIp && owner) {
        const kubeconfig = await deps.fetchKubeconfig({
          namespace: input.namespace,
          address: controlPlaneIp,
          user:
            inventoryNodes(input.inventory).find((n) => n.ip === controlPlaneIp)?.user ??
            input.sshUser,
          sshKeySecret: input.sshKeySecret,
          ...(input.hostKeys ? { hostKeys: input.hostKeys } : {}),
        });
        if (kubeconfig) {
          outcome.kubeconfigSecret = await deps.storeKubeconfig({
            owner,
            namespace: input.namespace,
            cluster: input.cluster,
            kubeconfig,
            server: `https://${controlPlaneIp}:6443`,
          });
        }
      }
      return outcome;
    },

    /**
     * Runs a tenant's own playbook or shell script on its cluster's nodes, in a runner Job: it
     * sees nothing of the worker, and reaches nothing but its nodes' sshd.
     */
    async runCustomAction(input: CustomActionInput): Promise<PlaybookOutcome> {
      const { log, progress } = await runInCluster(deps, input, customActionRun(input));
      return { recap: progress.recap, log };
    },
  };
}

export type PlaybookActivities = ReturnType<typeof createPlaybookActivities>;

/** kubespray's reset.yml and remove-node.yml ask "are you sure?"; nobody is there to answer. */
const ASKS_FIRST: readonly Playbook[] = ['reset.yml', 'remove-node.yml'];

/** The per-playbook variables: which nodes, and the confirmation a prompt would wait for. */
function playbookVars(input: PlaybookInput): Record<string, unknown> {
  const nodes = input.limit ?? [];
  const vars: Record<string, unknown> = {
    ...input.extraVars,
    // kubespray writes the admin kubeconfig on the control plane; the run writes nothing the
    // engine reads (the group vars ask for a local copy, as KUD's did).
    kubeconfig_localhost: false,
  };
  if (ASKS_FIRST.includes(input.playbook)) vars.skip_confirmation = true;
  if (input.playbook === 'remove-node.yml' && nodes.length) vars.node = nodes.join(',');
  return vars;
}

/** --limit for scale.yml and the like, a dry run, and the variables from the bundle. */
function playbookArgs(input: PlaybookInput): string[] {
  const nodes = input.limit ?? [];
  const limit = input.playbook !== 'remove-node.yml' && nodes.length;
  return [
    ...(limit ? ['--limit', nodes.join(',')] : []),
    ...(input.tags?.length ? ['--tags', input.tags.join(',')] : []),
    ...runVars(input.check, VARS_FILE),
  ];
}

/** The run's variables, as a JSON file in its bundle. */
const VARS_FILE = BUNDLE.file('extra-vars.json');
export const varsFile = (vars: Record<string, unknown>) => [
  { path: 'extra-vars.json', content: JSON.stringify(vars) },
];

/**
 * kubespray's own ansible.cfg, which finds its roles, library and plugins, as running from its
 * directory would; with what it sets for one operator's laptop overridden: no fact cache (a run
 * keeps nothing for the next), and host keys checked (it turns that off).
 */
function kubesprayConfig(kubesprayDir: string, hasConfig: boolean): Record<string, string> {
  return {
    ...(hasConfig ? { ANSIBLE_CONFIG: join(kubesprayDir, 'ansible.cfg') } : {}),
    ANSIBLE_CACHE_PLUGIN: 'memory',
    ANSIBLE_HOST_KEY_CHECKING: 'True',
  };
}
