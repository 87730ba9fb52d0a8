// A cloud VM's SSH host key, made by the engine before the VM exists (issue 24 item 2): the
// engine knows the key before it first connects, so a VM is never trusted on first use. The key
// pair is derived in the launch activity from the engine's seed (kubernetes/vm-host-key-seed.ts)
// and the launch key, so a retried launch gives the VM the same key. The private half goes only
// into the VM's user data (cloud-init's `ssh_keys`), which only the cloud's API sees; the public
// half is recorded in the host-key store. Neither passes through a workflow.
import { createHmac, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';

/** The comment a generated key's record carries, so a refusal can say where the key came from. */
export const GENERATED_KEY_COMMENT = 'hostflow-generated-at-launch';

export interface VmHostKey {
  /** OpenSSH private key: secret, for the user data only. */
  privateKey: string;
  /** `ssh-ed25519 <base64>`. */
  publicKey: string;
}

/** PKCS#8 DER of an ed25519 private key, up to its 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const KEY_TYPE = 'ssh-ed25519';

const sshString = (data: Buffer | string) => {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
};
const uint32 = (n: number) => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n >>> 0);
  return out;
};

/** The VM's ed25519 host key for `launchKey`: the same for the same seed and launch key. */
export function vmHostKey(seed: Buffer, launchKey: string): VmHostKey {
  const mac = createHmac('sha256', seed).update(`hostflow vm host key\0${launchKey}`).digest();
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, mac]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const pub = spki.subarray(spki.length - 32);
  const blob = Buffer.concat([sshString(KEY_TYPE), sshString(pub)]);
  return {
    privateKey: openSshPrivateKey(mac, pub, blob),
    publicKey: `${KEY_TYPE} ${blob.toString('base64')}`,
  };
}

/** OpenSSH's own private key format (PROTOCOL.key), unencrypted, as sshd reads host keys. */
function openSshPrivateKey(seed: Buffer, pub: Buffer, blob: Buffer): string {
  const check = uint32(seed.readUInt32BE(0));
  let section = Buffer.concat([
    check,
    check,
    sshString(KEY_TYPE),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(GENERATED_KEY_COMMENT),
  ]);
  const padding = Buffer.from(
    Array.from({ length: (8 - (section.length % 8)) % 8 }, (_, i) => i + 1),
  );
  section = Buffer.concat([section, padding]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0', 'latin1'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    uint32(1),
    sshString(blob),
    sshString(section),
  ]).toString('base64');
  const lines = body.match(/.{1,70}/g) ?? [];
  return [
    '-----BEGIN OPENSSH PRIVATE KEY-----',
    ...lines,
    '-----END OPENSSH PRIVATE KEY-----',
    '',
  ].join('\n');
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
