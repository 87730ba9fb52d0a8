// A cloud VM's SSH host key, made by the engine before the VM exists (issue 24 item 2): the
// engine knows the key before it first connects, so a VM is never trusted on first use. The key
// pair is generated in the launch activity; the private half goes only into the VM's user data
// (cloud-init's `ssh_keys`), which only the cloud's API sees, and the public half is recorded in
// the host-key store. Neither passes through a workflow.
import { randomBytes } from 'node:crypto';
import { generateEd25519KeyPair } from '../ssh/keys.js';

/** The comment a generated key's record carries, so a refusal can say where the key came from. */
export const GENERATED_KEY_COMMENT = 'hostflow-generated-at-launch';

export interface VmHostKey {
  /** OpenSSH private key: secret, for the user data only. */
  privateKey: string;
  /** `ssh-ed25519 <base64>`. */
  publicKey: string;
}

export function generateVmHostKey(): VmHostKey {
  const pair = generateEd25519KeyPair(GENERATED_KEY_COMMENT);
  return {
    privateKey: pair.privateKey,
    publicKey: pair.publicKey.split(' ').slice(0, 2).join(' '),
  };
}

/**
 * cloud-init config that installs `key` as the VM's only host key: the image's keys are deleted
 * and no other type is generated, so the VM presents exactly the key the engine recorded.
 */
function hostKeyCloudConfig(key: VmHostKey): string {
  const indented = key.privateKey
    .trim()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
  return [
    '#cloud-config',
    'ssh_deletekeys: true',
    'ssh_genkeytypes: []',
    'ssh_keys:',
    '  ed25519_private: |',
    indented,
    `  ed25519_public: ${key.publicKey}`,
    '',
  ].join('\n');
}

/** A whole MIME document (its own headers first), which goes in as a part verbatim. */
const IS_MIME = /^(content-type|mime-version)\s*:/i;

/**
 * The user data a VM is launched with: the host key's cloud-config alone, or, when the platform
 * or the Machine gives user data, a MIME multipart of both (cloud-init runs every part). The
 * given user data goes in unchanged: `text/x-not-multipart` tells cloud-init to tell its type
 * from its first line (`#cloud-config`, `#!`…), as it would for the user data alone; a MIME
 * document keeps its own headers. Ours comes first, so with cloud-init's default merge (no
 * replace) a tenant's `ssh_keys` cannot replace it; if one did, the VM would present a key the
 * engine does not hold and be refused, never trusted.
 */
export function userDataWithHostKey(userData: string | undefined, key: VmHostKey): string {
  const ours = hostKeyCloudConfig(key);
  if (userData === undefined || userData.trim() === '') return ours;
  let boundary: string;
  do boundary = `hostflow-${randomBytes(12).toString('hex')}`;
  while (userData.includes(boundary));
  const theirs = IS_MIME.test(userData)
    ? userData
    : `Content-Type: text/x-not-multipart; charset="utf-8"\nMIME-Version: 1.0\n\n${userData}`;
  return [
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    'MIME-Version: 1.0',
    '',
    `--${boundary}`,
    'Content-Type: text/cloud-config; charset="utf-8"',
    'MIME-Version: 1.0',
    '',
    ours,
    `--${boundary}`,
    theirs,
    `--${boundary}--`,
    '',
  ].join('\n');
}
