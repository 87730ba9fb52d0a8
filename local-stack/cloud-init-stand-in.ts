// The stand-in for cloud-init on the test VMs (ec2-vms.ts, ibm-vms.ts): a VM's sshd is a local
// test host, not a booted image, so nothing runs the VM's user data. This reads the one thing the
// engine relies on from it, cloud-init's `ssh_keys` (the host key the VM must present), from
// the user data as cloud-init would: a `#cloud-config` document, or the cloud-config parts of a
// MIME multipart. Everything else in the user data is ignored, as before.
import { parse } from 'yaml';
import type { KeyPair } from './ssh-hosts.js';

/** The ed25519 host key the user data gives (`ssh_keys.ed25519_private/_public`), if any. */
export function hostKeyFromUserData(userData: string | undefined): KeyPair | undefined {
  for (const part of cloudConfigParts(userData ?? '')) {
    let config: unknown;
    try {
      config = parse(part);
    } catch {
      continue; // cloud-init skips a part it cannot parse
    }
    const keys = (config as { ssh_keys?: Record<string, unknown> } | null)?.ssh_keys;
    const privateKey = keys?.ed25519_private;
    const publicKey = keys?.ed25519_public;
    if (typeof privateKey === 'string' && typeof publicKey === 'string') {
      return { privateKey, publicKey };
    }
  }
  return undefined;
}

/** The `#cloud-config` documents in the user data, in order. */
function cloudConfigParts(userData: string): string[] {
  const boundary = /^content-type:\s*multipart\/mixed;\s*boundary="?([^"\s;]+)"?/im.exec(
    userData,
  )?.[1];
  if (!boundary) return userData.startsWith('#cloud-config') ? [userData] : [];
  // [0] is the document's own headers (and preamble); the last part ends with `--`
  return userData
    .split(`--${boundary}`)
    .slice(1)
    .flatMap((part) => {
      const blank = part.search(/\r?\n\r?\n/);
      if (blank < 0) return [];
      const headers = part.slice(0, blank);
      const body = part.slice(blank).replace(/^\r?\n\r?\n/, '');
      if (/content-type:\s*multipart\//i.test(headers)) return cloudConfigParts(part.trimStart());
      const typed = /content-type:\s*text\/cloud-config/i.test(headers);
      return typed || body.startsWith('#cloud-config') ? [body] : [];
    });
}
