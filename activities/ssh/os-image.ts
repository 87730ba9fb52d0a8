// A node's OS image over SSH, with the commands MCO's daemon runs: `rpm-ostree rebase` onto the
// image (pulled by the node itself), a reboot, and `rpm-ostree status --json` for what booted.
// Image references are checked by their grammar before they reach a shell, and quoted anyway.
import { heartbeat } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { CoreV1Api } from '@kubernetes/client-node';
import { parseImageReference } from '../../shared/image-reference.js';
import type { NodeHost } from '../../shared/contracts/rollout.js';
import { createAdminKeyReader } from '../kubernetes/admin-keys.js';
import type { HostKeys } from './host-keys.js';
import { classifySshError, SshSessionError, withSsh, type ExecResult } from './session.js';

/** How rpm-ostree names an image it pulls from a registry (as MCO's daemon does). */
export const OSTREE_IMAGE_PREFIX = 'ostree-unverified-registry:';
const HEARTBEAT_MS = 5_000;
const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

interface RpmOstreeStatus {
  deployments?: Array<{ booted?: boolean; staged?: boolean; 'container-image-reference'?: string }>;
}

export function createOsImageActivities(deps: {
  core: CoreV1Api;
  engineNamespace: string;
  hostKeys: HostKeys;
}) {
  const readKey = createAdminKeyReader(deps);

  /** Runs `command` as root; `closeIsSuccess`: the connection dropping means it worked. */
  async function run(host: NodeHost, command: string, closeIsSuccess = false): Promise<ExecResult> {
    // A cluster's node, known by its address: its key is trusted on first use, then held.
    const hostKey = await deps.hostKeys.target({ address: host.address, port: host.port });
    const privateKey = await readKey(host.keySecret);
    const sudo = host.user === 'root' ? '' : 'sudo -n ';
    return withSsh(
      { address: host.address, port: host.port, user: host.user, privateKey, ...hostKey },
      (ssh) => ssh.exec(`${sudo}${command}`, { timeoutMs: 0 }),
    ).catch((err: unknown) => {
      if (closeIsSuccess && err instanceof SshSessionError && err.kind === 'closed') {
        return { code: 0, stdout: '', stderr: '' };
      }
      throw classifySshError(err, {
        host: host.name,
        address: host.address,
        user: host.user,
        secret: host.keySecret,
      });
    });
  }

  /** `rpm-ostree status --json`: the node's deployments, booted and staged. */
  async function readStatus(host: NodeHost): Promise<RpmOstreeStatus> {
    const result = await run(host, 'rpm-ostree status --json');
    if (result.code !== 0) {
      throw ApplicationFailure.retryable(
        `rpm-ostree status on ${host.name} failed (exit ${result.code}): ${lastLine(result.stderr)}`,
        'OsStatusFailed',
      );
    }
    try {
      return JSON.parse(result.stdout) as RpmOstreeStatus;
    } catch {
      throw ApplicationFailure.nonRetryable(
        `rpm-ostree status --json on ${host.name} did not print JSON`,
        'OsStatusUnreadable',
      );
    }
  }

  return {
    /** Stages `image` as the next boot's deployment. Retryable: the pull may fail for a while. */
    async rebaseOsImage(input: { host: NodeHost; image: string }): Promise<void> {
      const ref = parseImageReference(input.image);
      if ('error' in ref) throw ApplicationFailure.nonRetryable(ref.error, 'ImageReferenceInvalid');
      const target = quote(`${OSTREE_IMAGE_PREFIX}${input.image}`);
      // A pull takes minutes: heartbeats let a lost worker be noticed in seconds, not at the timeout.
      const beat = setInterval(() => heartbeat(`rebasing ${input.host.name}`), HEARTBEAT_MS);
      const result = await run(input.host, `rpm-ostree rebase --experimental ${target}`).finally(
        () => clearInterval(beat),
      );
      if (result.code !== 0) {
        throw ApplicationFailure.retryable(
          `rpm-ostree rebase on ${input.host.name} failed (exit ${result.code}): ${lastLine(result.stderr || result.stdout)}`,
          'RebaseFailed',
        );
      }
    },

    /**
     * Asks the node to reboot into its staged deployment; the connection dropping under it is what
     * success looks like. With nothing staged it leaves the node running: the staged image has
     * booted already, which is what a retry finds when its worker was lost after the reboot it
     * asked for (MCO's daemon reboots only into a pending deployment too).
     */
    async rebootNode(input: { host: NodeHost }): Promise<void> {
      const { deployments = [] } = await readStatus(input.host);
      if (!deployments.some((d) => d.staged)) return;
      const result = await run(input.host, 'systemctl reboot', true);
      if (result.code !== 0 && result.code !== -1) {
        throw ApplicationFailure.retryable(
          `systemctl reboot on ${input.host.name} failed (exit ${result.code}): ${lastLine(result.stderr)}`,
          'RebootFailed',
        );
      }
    },

    /** The image the node booted, from `rpm-ostree status --json` (undefined: not an image). */
    async bootedOsImage(input: { host: NodeHost }): Promise<string | undefined> {
      const status = await readStatus(input.host);
      const booted = status.deployments?.find((d) => d.booted)?.['container-image-reference'];
      return booted?.startsWith(OSTREE_IMAGE_PREFIX)
        ? booted.slice(OSTREE_IMAGE_PREFIX.length)
        : booted;
    },
  };
}

const lastLine = (text: string) => text.trim().split('\n').pop() ?? '';

export type OsImageActivities = ReturnType<typeof createOsImageActivities>;
