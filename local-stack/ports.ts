// Free loopback ports for components started by the project.
import { createServer } from 'node:net';

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not allocate a free port'));
      });
    });
  });
}

/** Fails with the component's name when a fixed port is taken (say, by a stale earlier run). */
export async function assertPortsFree(
  component: string,
  ports: number[],
  host = '127.0.0.1',
): Promise<void> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, host, () => server.close(() => resolve(true)));
    });
    if (!free) {
      throw new Error(
        `${component}: port ${host}:${port} is already in use. Is another hostflow (or temporal) running? ` +
          'Stop it, or point hostflow at it with the options below.',
      );
    }
  }
}
