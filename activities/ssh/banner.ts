// "Does an SSH server answer here?": whether a full SSH-2.0 identification line arrives on
// address:22 within the timeout. Used to tell a booting VM from a ready one, and by the local
// stack to tell when a test host's sshd is up.
import { connect } from 'node:net';

export function sshBanner(address: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port: 22, timeout: timeoutMs });
    let data = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
      if (data.includes('\n')) done(data.startsWith('SSH-2.0-'));
    });
    socket.on('timeout', () => done(false));
    socket.on('error', () => done(false));
    socket.on('close', () => done(false)); // closed before a whole banner line
  });
}
