// ed25519 key pairs in OpenSSH format. ssh2 1.17 emits an unusable key about 1 time in 256
// (mscdex/ssh2#1390): such pairs are thrown away and generated again.
import ssh2 from 'ssh2';

const ED25519_BLOB_BYTES = 51; // string "ssh-ed25519" (4 + 11) + 32-byte key (4 + 32)

export function generateEd25519KeyPair(comment: string): { privateKey: string; publicKey: string } {
  for (;;) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment });
    const blob = Buffer.from(pair.public.split(' ')[1] ?? '', 'base64');
    if (
      blob.length === ED25519_BLOB_BYTES &&
      !(ssh2.utils.parseKey(pair.private) instanceof Error)
    ) {
      return { privateKey: pair.private, publicKey: pair.public };
    }
  }
}
