// How many SSH connections a test host accepted: sshd logs each admin login.
import type { SshHost } from '../local-stack/ssh-hosts.js';

/** Admin logins sshd logged so far (its log is in the host's state dir). */
export async function adminLogins(host: SshHost): Promise<number> {
  const log = '/run/hostflow-host/sshd.log';
  const found = await host.exec(['grep', '-c', `Accepted publickey for ${host.adminUser} `, log]);
  return Number(found.stdout.trim()) || 0;
}
