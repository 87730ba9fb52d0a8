// Runs a Machine's bootstrap data on its host over SSH, as cloud-init would at first boot: once
// (the Cluster API sentinel says it ran), as root, with the machine's identity in its
// environment, its output kept in a root-only log on the host. The data is read from its Secret
// here and goes nowhere else: not into results, errors or logs.
import { Context, heartbeat } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { CoreV1Api } from '@kubernetes/client-node';
import { BOOTSTRAP_DATA_KEY, BOOTSTRAP_SENTINEL } from '../../shared/machine-api.js';
import { createAdminKeyReader } from '../kubernetes/admin-keys.js';
import { isNotFound, rethrowKube } from '../kubernetes/errors.js';
import { bootstrapScript } from './bootstrap-script.js';
import type { HostKeys } from './host-keys.js';
import { classifySshError, withSsh } from './session.js';

export interface BootstrapRun {
  /** The Machine's namespace, where its bootstrap Secret is. */
  namespace: string;
  secretName: string;
  host: {
    /** For messages: the host's name or the VM's id. */
    name: string;
    address: string;
    port?: number;
    user: string;
    /** The admin key's Secret in the engine namespace. */
    keySecret: string;
  };
  /** What the data may read: PROVIDER_ID, MACHINE_NAME, CLUSTER_NAME. */
  env: Record<string, string>;
}

/** Where the data's output goes on the host, as cloud-init's own output log. */
export const BOOTSTRAP_LOG = '/var/log/hostflow-bootstrap-output.log';
const HEARTBEAT_MS = 10_000;
const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

export function createBootstrapActivities(deps: {
  core: CoreV1Api;
  engineNamespace: string;
  hostKeys: HostKeys;
}) {
  const readAdminKey = createAdminKeyReader(deps);
  /** A static host's key as host-config gives it, or first use (activities/ssh/host-keys.ts). */
  const hostKeyOf = (host: BootstrapRun['host']) =>
    deps.hostKeys.target({ host: host.name, address: host.address, port: host.port });

  async function readData(namespace: string, name: string): Promise<string> {
    try {
      const secret = await deps.core.readNamespacedSecret({ namespace, name });
      const value = secret.data?.[BOOTSTRAP_DATA_KEY];
      if (value) return Buffer.from(value, 'base64').toString('utf8');
    } catch (err) {
      if (!isNotFound(err)) rethrowKube(`read Secret ${namespace}/${name}`, err);
    }
    throw ApplicationFailure.nonRetryable(
      `bootstrap Secret ${namespace}/${name} has no key "${BOOTSTRAP_DATA_KEY}" (or is gone)`,
      'BootstrapDataMissing',
    );
  }

  return {
    /**
     * Removes the sentinel from a host the Machine gives back: a static host's next Machine is
     * bootstrapped afresh, as a new VM would be.
     */
    async forgetBootstrap(input: { host: BootstrapRun['host'] }): Promise<void> {
      const { host } = input;
      const hostKey = await hostKeyOf(host);
      const privateKey = await readAdminKey(host.keySecret);
      const sudo = host.user === 'root' ? '' : 'sudo -n ';
      const context = {
        host: host.name,
        address: host.address,
        user: host.user,
        secret: host.keySecret,
      };
      const result = await withSsh(
        { address: host.address, port: host.port, user: host.user, privateKey, ...hostKey },
        (ssh) => ssh.exec(`${sudo}rm -f ${quote(BOOTSTRAP_SENTINEL)}`),
      ).catch((err: unknown) => {
        throw classifySshError(err, context);
      });
      if (result.code !== 0) {
        throw ApplicationFailure.retryable(
          `could not remove ${BOOTSTRAP_SENTINEL} on ${host.name}: ${result.stderr.trim()}`,
          'BootstrapForgetFailed',
        );
      }
    },

    /** 'ran', or 'already' when the host says an earlier run succeeded. */
    async runBootstrapData(input: BootstrapRun): Promise<'ran' | 'already'> {
      const { host } = input;
      const converted = bootstrapScript(await readData(input.namespace, input.secretName));
      if ('error' in converted) {
        throw ApplicationFailure.nonRetryable(
          `Secret ${input.namespace}/${input.secretName}: ${converted.error}`,
          'BootstrapDataUnusable',
        );
      }
      const hostKey = await hostKeyOf(host);
      const privateKey = await readAdminKey(host.keySecret);
      const sudo = host.user === 'root' ? '' : 'sudo -n ';
      const env = Object.entries(input.env)
        .map(([k, v]) => `${k}=${quote(v)}`)
        .join(' ');
      const sentinel = quote(BOOTSTRAP_SENTINEL);
      // The data's own output goes to the log; stdout carries only this wrapper's verdict.
      const command = [
        `if ${sudo}test -f ${sentinel}; then echo already; exit 0; fi`,
        `${sudo}env ${env} /bin/sh -c ${quote(`umask 077; exec /bin/sh -s >>${BOOTSTRAP_LOG} 2>&1`)}`,
        'rc=$?',
        'if [ $rc -ne 0 ]; then echo "failed $rc"; exit 0; fi',
        `if ${sudo}test -f ${sentinel}; then echo ran; else echo no-sentinel; fi`,
      ].join('\n');
      const context = {
        host: host.name,
        address: host.address,
        user: host.user,
        secret: host.keySecret,
      };
      const beat = setInterval(() => heartbeat(`bootstrapping ${host.name}`), HEARTBEAT_MS);
      try {
        const result = await withSsh(
          { address: host.address, port: host.port, user: host.user, privateKey, ...hostKey },
          (ssh) => ssh.exec(command, { stdin: converted.script, timeoutMs: 0 }),
          { signal: Context.current().cancellationSignal },
        ).catch((err: unknown) => {
          throw classifySshError(err, context);
        });
        const verdict = result.stdout.trim().split('\n').pop() ?? '';
        if (result.code === 0 && (verdict === 'ran' || verdict === 'already')) return verdict;
        const at = `${host.name} (${host.address})`;
        throw ApplicationFailure.nonRetryable(
          verdict === 'no-sentinel'
            ? `the bootstrap data ran on ${at} but did not write ${BOOTSTRAP_SENTINEL}; ` +
                `its output is in ${BOOTSTRAP_LOG} on the host`
            : verdict.startsWith('failed ')
              ? `the bootstrap data failed on ${at} with exit ${verdict.slice(7)}; ` +
                `its output is in ${BOOTSTRAP_LOG} on the host`
              : `running the bootstrap data on ${at} failed (exit ${result.code}): ` +
                `${result.stderr.trim().split('\n').pop() ?? ''}`,
          'BootstrapFailed',
        );
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type BootstrapActivities = ReturnType<typeof createBootstrapActivities>;
