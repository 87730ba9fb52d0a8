// A TCP pass-through in front of a real server that a test can cut: while cut, open connections
// are dropped and new ones closed at once, as when the network to it fails. Not a stand-in for
// the server (everything passes through to it); only the fault is made here.
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  /** host:port to dial instead of the server. */
  address: string;
  /** Connections accepted so far (for SSH: handshakes made through it). */
  readonly connections: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const colon = target.lastIndexOf(':');
  const host = target.slice(0, colon);
  const port = Number(target.slice(colon + 1));
  const open = new Set<Socket>();
  let cut = false;
  let connections = 0;
  const server = createServer((client) => {
    connections++;
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(port, host);
    for (const [socket, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      open.add(socket);
      socket.on('error', () => other.destroy());
      socket.on('close', () => {
        open.delete(socket);
        other.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    get connections() {
      return connections;
    },
    cut() {
      cut = true;
      open.forEach((socket) => socket.destroy());
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        open.forEach((socket) => socket.destroy());
        server.close(() => resolve());
      }),
  };
}
