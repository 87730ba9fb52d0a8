// A ClusterOperation's custom action as a command: the tenant's playbook (ansible-playbook on the
// cluster's inventory) or shell script (bash, with the inventory and an ssh_config that reaches the
// nodes), in the sandbox (sandbox.ts), its SSH going out through the relay (ssh-relay.ts). The
// action's text was read from its ConfigMap when the operation started, and is in its history.
import { mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ActionType } from '../../shared/cluster-operation-api.js';
import {
  ANSIBLE_QUIET,
  checkedHostKeys,
  runVars,
  sshArgs,
  type ClusterRunInput,
  type RunFiles,
} from './cluster-run.js';
import { inventoryHosts } from './known-hosts.js';
import { sandboxArgs } from './sandbox.js';
import { startSshRelay } from './ssh-relay.js';

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

/** The sandboxed command for `input`'s action, and how to close its SSH relay after. */
export async function customActionCommand(
  ansiblePlaybook: string,
  input: CustomActionRun,
  files: RunFiles,
): Promise<{ args: string[]; env: Record<string, string>; close: () => Promise<void> }> {
  const { action } = input;
  const { dir, run } = files;
  const actionFile = join(dir, `custom.${run}.${action.type === 'shell' ? 'sh' : 'yml'}`);
  writeFileSync(actionFile, action.content, { mode: 0o600 });
  const home = join(dir, '.home');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const relayDir = join(tmpdir(), `hostflow-ssh-${run}`);
  const hosts = inventoryHosts(input.inventory);
  const relay = await startSshRelay(
    relayDir,
    hosts.map((host) => host.address),
  );
  const hostKeys = checkedHostKeys(files.knownHosts);
  const vars = input.extraVars ?? {};
  const inner =
    action.type === 'shell'
      ? ['bash', actionFile]
      : [
          ansiblePlaybook,
          ...['-i', files.inventory, actionFile, '--user', input.sshUser],
          ...['--private-key', files.keyFile],
          ...runVars(input.check, vars),
        ];
  const sshConfig = join(dir, `ssh_config.${run}`);
  if (action.type === 'shell') {
    // `ssh -F "$HOSTFLOW_SSH_CONFIG" <address>` reaches a node as the installer logs in there.
    writeFileSync(
      sshConfig,
      [
        ...hosts.flatMap((host) => [
          `Host ${host.address}`,
          `  User ${host.user ?? input.sshUser}`,
        ]),
        'Host *',
        `  User ${input.sshUser}`,
        `  IdentityFile ${files.keyFile}`,
        `  ProxyCommand ${relay.proxyCommand}`,
        ...hostKeys.map(([name, value]) => `  ${name} ${value}`),
        '',
      ].join('\n'),
    );
  }
  const venv = dirname(dirname(ansiblePlaybook));
  const python = dirname(dirname(realpathSync(join(venv, 'bin', 'python3'))));
  const env: Record<string, string> = {
    PATH: `${join(venv, 'bin')}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    LANG: 'C.UTF-8',
    ...ANSIBLE_QUIET,
    ANSIBLE_SSH_ARGS: `-o ProxyCommand="${relay.proxyCommand}" ${sshArgs(hostKeys)}`,
    ANSIBLE_HOST_KEY_CHECKING: 'True',
    ANSIBLE_LOCAL_TEMP: join(dir, '.ansible-tmp'),
    HOSTFLOW_INVENTORY: files.inventory,
    HOSTFLOW_SSH_CONFIG: sshConfig,
    HOSTFLOW_EXTRA_VARS: JSON.stringify(vars),
  };
  const args = sandboxArgs({ clusterDir: dir, relayDir, readOnly: [venv, python] }, inner, env);
  const close = async () => {
    await relay.close();
    for (const file of [actionFile, sshConfig]) rmSync(file, { force: true });
  };
  return { args: ['bwrap', ...args], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, close };
}
