// Free loopback ports for components started by the project.
import { createServer } from 'node:net';

/**
 * Below Linux's ephemeral range (32768–60999): a port the kernel hands out for port 0 can be
 * taken by any process's outgoing connection between this check and the component's bind, which
 * failed a CI run with EADDRINUSE. Nothing takes a port from this range unasked.
 */
const PORT_RANGE = { from: 20_000, to: 32_767 } as const;
const ATTEMPTS = 50;

/** A loopback port free right now, picked at random below the ephemeral range. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = PORT_RANGE.from + Math.floor(Math.random() * (PORT_RANGE.to - PORT_RANGE.from));
    if (await bindable(port, host)) return port;
  }
  throw new Error(
    `could not find a free port on ${host} in ${PORT_RANGE.from}-${PORT_RANGE.to} after ${ATTEMPTS} tries`,
  );
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** Fails with the component's name when a fixed port is taken (say, by a stale earlier run). */
export async function assertPortsFree(
  component: string,
  ports: number[],
  host = '127.0.0.1',
): Promise<void> {
  for (const port of ports) {
    if (!(await bindable(port, host))) {
      throw new Error(
        `${component}: port ${host}:${port} is already in use. Is another hostflow (or temporal) running? ` +
          'Stop it, or point hostflow at it with the options below.',
      );
    }
  }
}
