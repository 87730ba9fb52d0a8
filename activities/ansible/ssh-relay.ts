// The only way out of a custom action's sandbox (sandbox.ts): one Unix socket per node of the
// cluster, each relayed to that node's SSH port and nowhere else. The sandbox has no network of
// its own, so a tenant's playbook or script reaches its own nodes' sshd, and not the Kubernetes
// API, Temporal, the OTP service or another tenant's hosts. ssh inside it connects through
// `ProxyCommand socat STDIO UNIX-CONNECT:<dir>/<address>_<port>`, the directory bound at
// RELAY_INSIDE (a socket's path must be short: 108 bytes).
import { mkdirSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';

export interface SshRelay {
  /** ssh's ProxyCommand, reaching `%h` on `%p` through its socket. */
  proxyCommand: string;
  close(): Promise<void>;
}

export const SSH_PORT = 22;
/** Where the sandbox sees the relay's sockets. */
export const RELAY_INSIDE = '/run/hostflow-ssh';

/** Relays `<dir>/<address>_22` (a short directory) to each address's SSH port, until closed. */
export async function startSshRelay(dir: string, addresses: string[]): Promise<SshRelay> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const servers: Server[] = [];
  for (const address of new Set(addresses)) {
    const server = createServer((inside) => {
      const node = createConnection({ host: address, port: SSH_PORT });
      inside.pipe(node).pipe(inside);
      // Either end going takes the other with it; its error is ssh's to report inside.
      inside.on('error', () => node.destroy());
      node.on('error', () => inside.destroy());
      inside.on('close', () => node.destroy());
      node.on('close', () => inside.destroy());
    });
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(join(dir, `${address}_${SSH_PORT}`), resolve);
    });
  }
  return {
    proxyCommand: `socat STDIO UNIX-CONNECT:${RELAY_INSIDE}/%h_%p`,
    async close() {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
