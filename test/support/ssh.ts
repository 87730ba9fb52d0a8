// Reaching the SSH test hosts from the tests: one command over a real SSH login, and a plain
// "does anything listen on :22" probe.
import { connect } from 'node:net';
import ssh2 from 'ssh2';

export interface SshLogin {
  address: string;
  user: string;
  privateKey: string;
  /** `ssh-ed25519 AAAA…`: checked when given. */
  hostPublicKey?: string;
}

/** Logs in and runs one command; resolves with its exit code and stdout. */
export function sshCommand(
  login: SshLogin,
  command: string,
): Promise<{ code: number; stdout: string }> {
  const blob = login.hostPublicKey
    ? Buffer.from(login.hostPublicKey.split(' ')[1] ?? '', 'base64')
    : undefined;
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    client
      .on('ready', () => {
        client.exec(command, (err, stream) => {
          if (err) return reject(err);
          let stdout = '';
          stream.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
          stream.stderr.on('data', () => undefined);
          stream.on('close', (code: number) => {
            client.end();
            resolve({ code, stdout });
          });
        });
      })
      .on('error', reject)
      .connect({
        host: login.address,
        port: 22,
        username: login.user,
        privateKey: login.privateKey,
        ...(blob ? { hostVerifier: (key: Buffer) => key.equals(blob) } : {}),
        readyTimeout: 20_000,
      });
  });
}

/** True if something accepts TCP on address:22 (as seen from the root namespace). */
export function listens(address: string, timeoutMs = 5000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port: 22, timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.on('connect', () => done(true));
    socket.on('error', () => done(false));
    socket.on('timeout', () => done(false));
  });
}
