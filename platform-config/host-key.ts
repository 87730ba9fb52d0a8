// An SSH host's public key in known_hosts form (`ssh-ed25519 AAAA… [comment]`), as host-config
// gives it (`host.<name>.host-key`), or a BareMetalHost's annotation. Pure code, no crypto
// library: only the key blob's own structure is checked (its type string must match the named
// type). Not for workflow code: it decodes with atob, which the workflow sandbox lacks (tried);
// activities check keys and workflows carry the result.

/** The key types hostflow's SSH client verifies. */
const HOST_KEY_TYPES = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'ssh-rsa',
] as const;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const COMMENT = /^[\x21-\x7e ]{0,200}$/;

export type ParsedHostKey =
  { ok: true; type: string; base64: string; blob: Uint8Array } | { ok: false; reason: string };

const EXPECTED =
  'expected one line "<type> <base64 key>" as in known_hosts or /etc/ssh/ssh_host_ed25519_key.pub ' +
  `(type one of ${HOST_KEY_TYPES.join(', ')})`;

function decodeBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text) || text.length % 4 !== 0) return undefined;
  const bin = atob(text);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** A host key someone gave for a host, and where it was given (for messages: what to change). */
export interface GivenHostKey {
  /** `<type> <base64>`, checked by parseHostKey. */
  key: string;
  /** e.g. `annotation hostflow.dev/ssh-host-key on BareMetalHost metal3/node-1`. */
  from: string;
}

/** The key, or why it is not one. Never echoes more than the key's type back. */
export function parseHostKey(value: string): ParsedHostKey {
  const parts = value.trim().split(/[ \t]+/);
  if (parts.length < 2 || value.includes('\n'))
    return { ok: false, reason: `not a key; ${EXPECTED}` };
  const [type, base64, ...comment] = parts;
  if (!(HOST_KEY_TYPES as readonly string[]).includes(type)) {
    return { ok: false, reason: `unknown key type "${type.slice(0, 40)}"; ${EXPECTED}` };
  }
  if (!COMMENT.test(comment.join(' '))) {
    return {
      ok: false,
      reason: `the comment after the key has unprintable characters; ${EXPECTED}`,
    };
  }
  const blob = decodeBase64(base64);
  if (!blob) return { ok: false, reason: `the key after "${type}" is not base64; ${EXPECTED}` };
  // The blob starts with its own type as an SSH string: uint32 length, then the name.
  const length = blob.length >= 4 ? new DataView(blob.buffer).getUint32(0) : -1;
  const inner =
    length > 0 && 4 + length <= blob.length
      ? String.fromCharCode(...blob.subarray(4, 4 + length))
      : undefined;
  if (inner !== type || (type === 'ssh-ed25519' && blob.length !== 51)) {
    return {
      ok: false,
      reason: `the base64 part is not a ${type} key (truncated, or of another type); ${EXPECTED}`,
    };
  }
  return { ok: true, type, base64, blob };
}
