// Installs a Software's packages on one node of a cluster: logs in as kubespray did, with the
// cluster's installer key and the node's admin user, refreshes the package lists and installs, then waits
// for the package manager's exit status, which the original never read. Package specs are
// checked by the workflow (workflows/software/packages.ts) and quoted here all the same.
import { Context, heartbeat } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { installerKeySecretName } from '../../shared/bpa-api.js';
import type { AdminKeyReader } from '../kubernetes/admin-keys.js';
import type { HostKeys } from './host-keys.js';
import { classifySshError, withSsh } from './session.js';

export interface PackageInstall {
  namespace: string;
  cluster: string;
  node: { label: string; ip: string; user: string };
  /** `name` or `name=version`. */
  packages: string[];
}

const HEARTBEAT_MS = 10_000;
/** apt-get's exit status for a request it cannot satisfy (no such package or version). */
const APT_REQUEST_FAILED = 100;
const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/**
 * What the package manager said went wrong: apt's error lines (`E: …`), every one, since apt
 * names each package it cannot install on a line of its own; else its last lines.
 */
function whatFailed({ stdout, stderr }: { stdout: string; stderr: string }): string {
  const lines = `${stderr}\n${stdout}`.split('\n').map((line) => line.trim());
  const errors = lines.filter((line) => line.startsWith('E: '));
  if (errors.length) return errors.join('; ');
  return (stderr.trim() || stdout.trim()).split('\n').slice(-3).join(' ');
}

export function createPackageActivities(deps: {
  /** The package manager's path on the nodes (apt-get, or a stand-in in tests). */
  packageManager: string;
  readKey: (namespace: string, secret: string) => ReturnType<AdminKeyReader>;
  hostKeys: HostKeys;
}) {
  return {
    /** Installs `packages` on the node; the manager's own error when it refuses. */
    async installPackages(input: PackageInstall): Promise<{ installed: string[] }> {
      const { namespace, cluster, node, packages } = input;
      if (!packages.length) return { installed: [] };
      const secret = installerKeySecretName(cluster);
      // the node's key as the installer recorded it (activities/ssh/host-keys.ts)
      const hostKey = await deps.hostKeys.target({ address: node.ip });
      const privateKey = await deps.readKey(namespace, secret);
      // Not root: the admin user is a sudoer (as kubespray's `become` needs it to be).
      const sudo = node.user === 'root' ? '' : 'sudo -n ';
      const pm = `${sudo}env DEBIAN_FRONTEND=noninteractive ${quote(deps.packageManager)}`;
      const command =
        `${pm} update -q && ` +
        `${pm} install -y -q --no-install-recommends -- ${packages.map(quote).join(' ')}`;
      const context = { host: node.label, address: node.ip, user: node.user, secret };
      const beat = setInterval(() => heartbeat(`installing on ${node.label}`), HEARTBEAT_MS);
      try {
        const result = await withSsh(
          { address: node.ip, user: node.user, privateKey, ...hostKey },
          (ssh) => ssh.exec(command, { timeoutMs: 0 }),
          { signal: Context.current().cancellationSignal },
        ).catch((err: unknown) => {
          throw classifySshError(err, context);
        });
        if (result.code !== 0) {
          throw ApplicationFailure.nonRetryable(
            `node ${node.label} (${node.ip}): ${deps.packageManager} install ` +
              `${packages.join(' ')} failed (exit ${result.code}): ${whatFailed(result)}`,
            result.code === APT_REQUEST_FAILED ? 'PackageNotInstallable' : 'PackageInstallFailed',
          );
        }
        return { installed: packages };
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type PackageActivities = ReturnType<typeof createPackageActivities>;
