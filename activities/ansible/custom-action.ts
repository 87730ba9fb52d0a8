// A ClusterOperation's custom action as a run: the tenant's playbook (ansible-playbook on the
// cluster's inventory) or shell script (bash, with the inventory and an ssh_config that reaches
// the nodes), in a runner Job of its own (cluster-run.ts). The action's text was read from its
// ConfigMap when the operation started, and is in its history; it reaches the run only as a file
// of the run's bundle, mounted read-only.
import type { ActionType } from '../../shared/cluster-operation-api.js';
import { inventoryNodes } from '../../shared/inventory.js';
import {
  ANSIBLE_QUIET,
  BUNDLE,
  checkedHostKeys,
  runVars,
  sshArgs,
  type ClusterRunInput,
  type RunHow,
} from './cluster-run.js';
import { nodesByAddress } from './known-hosts.js';

export interface CustomAction {
  type: ActionType;
  configMap: string;
  /** Its key in the ConfigMap's data. */
  key: string;
  /** The playbook's or the script's text. */
  content: string;
}

export interface CustomActionRun extends ClusterRunInput {
  action: CustomAction;
  sshUser: string;
  extraVars?: Record<string, unknown>;
  check?: boolean;
}

/** How `input`'s action runs: its command, its environment and its files. */
export function customActionRun(input: CustomActionRun): RunHow {
  const { action } = input;
  const actionFile = `action.${action.type === 'shell' ? 'sh' : 'yml'}`;
  const vars = input.extraVars ?? {};
  const hostKeys = checkedHostKeys(BUNDLE.knownHosts);
  const files: NonNullable<RunHow['files']> = [
    { path: actionFile, content: action.content },
    { path: 'extra-vars.json', content: JSON.stringify(vars) },
  ];
  if (action.type === 'shell') {
    // `ssh -F "$HOSTFLOW_SSH_CONFIG" <address>` reaches a node as the installer logs in there.
    files.push({
      path: 'ssh_config',
      content: [
        ...nodesByAddress(inventoryNodes(input.inventory)).flatMap((host) => [
          `Host ${host.address}`,
          `  User ${host.user ?? input.sshUser}`,
        ]),
        'Host *',
        `  User ${input.sshUser}`,
        `  IdentityFile ${BUNDLE.keyFile}`,
        ...hostKeys.map(([name, value]) => `  ${name} ${value}`),
        '',
      ].join('\n'),
    });
  }
  return {
    name: `custom-${action.key.replace(/[^-_a-zA-Z0-9]/g, '_')}`,
    what: `${action.type} ${action.key} (ConfigMap ${action.configMap})`,
    command:
      action.type === 'shell'
        ? ['bash', BUNDLE.file(actionFile)]
        : [
            'ansible-playbook',
            ...['-i', BUNDLE.inventory, BUNDLE.file(actionFile), '--user', input.sshUser],
            ...['--private-key', BUNDLE.keyFile],
            ...runVars(input.check, BUNDLE.file('extra-vars.json')),
          ],
    env: {
      ...ANSIBLE_QUIET,
      ANSIBLE_SSH_ARGS: sshArgs(hostKeys),
      ANSIBLE_HOST_KEY_CHECKING: 'True',
      HOSTFLOW_INVENTORY: BUNDLE.inventory,
      HOSTFLOW_SSH_CONFIG: BUNDLE.file('ssh_config'),
      HOSTFLOW_EXTRA_VARS: JSON.stringify(vars),
    },
    files,
  };
}
