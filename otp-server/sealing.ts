// Encryption at rest for stored keys: AES-256-GCM with a key read from a file. The associated
// data binds each sealed blob to its record name, so a blob copied into another record (or a
// record renamed) does not open. Blob layout: version (1) | key id (4) | iv (12) | tag (16) | data.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

const VERSION = 1;
const KEY_ID_BYTES = 4;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES;

export interface Sealer {
  /** A short, non-secret fingerprint of the key, to tell replicas' keys apart in errors. */
  readonly keyId: string;
  seal(recordName: string, plaintext: Buffer): Buffer;
  /** Throws when the blob was sealed under another key or name, or was altered. */
  open(recordName: string, sealed: Buffer): Buffer;
}

/** Reads a 32-byte key stored raw or as base64 (whitespace around it ignored). */
export function readSealingKey(path: string): Buffer {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read the sealing key ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (raw.length === 32) return raw;
  const text = raw.toString('latin1').trim();
  const decoded = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : undefined;
  if (decoded?.length === 32) return decoded;
  throw new Error(
    `the sealing key ${path} must hold 32 bytes, raw or base64 (try: head -c 32 /dev/urandom | base64)`,
  );
}

export function createSealer(key: Buffer): Sealer {
  if (key.length !== 32) throw new Error('the sealing key must be 32 bytes');
  const keyIdBytes = createHash('sha256')
    .update('hostflow-otp sealing key id\0')
    .update(key)
    .digest()
    .subarray(0, KEY_ID_BYTES);
  const keyId = keyIdBytes.toString('hex');
  const aad = (recordName: string) => Buffer.from(`hostflow-otp/v${VERSION}\0${recordName}`);

  return {
    keyId,
    seal(recordName, plaintext) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aad(recordName));
      const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([Buffer.of(VERSION), keyIdBytes, iv, cipher.getAuthTag(), data]);
    },
    open(recordName, sealed) {
      if (sealed.length < HEADER_BYTES || sealed[0] !== VERSION) {
        throw new Error(`${recordName}: not a sealed record (version ${sealed[0] ?? 'none'})`);
      }
      const blobKeyId = sealed.subarray(1, 1 + KEY_ID_BYTES).toString('hex');
      if (blobKeyId !== keyId) {
        throw new Error(`${recordName}: sealed with key ${blobKeyId}, this replica has ${keyId}`);
      }
      const ivEnd = 1 + KEY_ID_BYTES + IV_BYTES;
      const decipher = createDecipheriv(
        'aes-256-gcm',
        key,
        sealed.subarray(1 + KEY_ID_BYTES, ivEnd),
      );
      decipher.setAAD(aad(recordName));
      decipher.setAuthTag(sealed.subarray(ivEnd, HEADER_BYTES));
      try {
        return Buffer.concat([decipher.update(sealed.subarray(HEADER_BYTES)), decipher.final()]);
      } catch {
        throw new Error(`${recordName}: sealed data failed authentication (altered or moved)`);
      }
    },
  };
}
