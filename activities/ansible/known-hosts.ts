// The known_hosts file a playbook run checks its hosts against: exactly the keys hostflow holds
// for the inventory's hosts (activities/ssh/host-keys.ts), each verified by logging in once with
// the installer key before ansible starts. ansible then runs with StrictHostKeyChecking=yes: it
// reaches no host whose key hostflow has not checked, and trusts nothing on its own.
import { ApplicationFailure } from '@temporalio/common';
import type { GivenHostKey } from '../../platform-config/host-key.js';
import type { InventoryNode } from '../../shared/inventory.js';
import type { HostKeys } from '../ssh/host-keys.js';
import { classifySshError } from '../ssh/session.js';

/**
 * known_hosts lines for the inventory's hosts. A host that cannot be reached gets no line (ansible
 * then cannot reach it either, and says so); a host whose key is refused fails the run, before
 * ansible touches any host. A host with a `given` key (by address) is held to that key alone.
 */
export async function knownHostsFor(
  hostKeys: HostKeys,
  nodes: InventoryNode[],
  login: { user: string; privateKey: string },
  given: Record<string, GivenHostKey> = {},
): Promise<string> {
  const lines: string[] = [];
  for (const host of nodesByAddress(nodes)) {
    const user = host.user ?? login.user;
    try {
      const key = await hostKeys.verifiedKey(
        { address: host.address, ...(given[host.address] ? { given: given[host.address] } : {}) },
        { user, privateKey: login.privateKey },
      );
      lines.push(`${host.address} ${key}`);
    } catch (err) {
      const failure = classifySshError(err, { host: host.label, address: host.address, user });
      if (failure.type === 'SshUnavailable') continue;
      if (failure.type === 'SshHostKeyMismatch') {
        throw ApplicationFailure.create({
          message: `node ${host.label}: ${failure.message}; no playbook runs against it`,
          type: failure.type,
          nonRetryable: true,
          details: [{ failedHost: host.label }],
        });
      }
      throw failure;
    }
  }
  return lines.map((line) => `${line}\n`).join('');
}

/** Each address once, with the label and login of the last node listed at it. */
export function nodesByAddress(
  nodes: InventoryNode[],
): Array<{ label: string; address: string; user?: string }> {
  const hosts = new Map(nodes.map((n) => [n.ip, { label: n.label, address: n.ip, user: n.user }]));
  return [...hosts.values()];
}
