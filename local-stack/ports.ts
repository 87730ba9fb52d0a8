// Free loopback ports for components started by the project.
import { createServer } from 'node:net';

/**
 * Below Linux's ephemeral range (32768–60999): a port the kernel hands out for port 0 can be
 * taken by any process's outgoing connection between this check and the component's bind, which
 * failed a CI run with EADDRINUSE. Nothing takes a port from this range unasked.
 */
const PORT_RANGE = { from: 20_000, to: 32_767 } as const;
const ATTEMPTS = 50;
/**
 * Test files run in parallel, one jest worker each: two could pick the same port before either
 * bound it (CI: EADDRINUSE). Each worker, and its children, picks from a share of its own.
 */
const SHARES = 8;
const SHARE = Math.floor((PORT_RANGE.to - PORT_RANGE.from) / SHARES);
const share = Number(process.env.JEST_WORKER_ID ?? 0) % SHARES;
/**
 * Ports this process has handed out. A free port stays free until its component binds it, so two
 * calls before either bind (`Promise.all([freePort(), freePort()])`) could get the same one (CI:
 * the worker's and the bridge's health endpoints, EADDRINUSE). None is handed out twice.
 */
const handedOut = new Set<number>();

/** A loopback port free right now, picked at random below the ephemeral range. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const from = PORT_RANGE.from + share * SHARE;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = from + Math.floor(Math.random() * SHARE);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await bindable(port, host)) return port;
  }
  throw new Error(
    `could not find a free port on ${host} in ${from}-${from + SHARE - 1} after ${ATTEMPTS} tries`,
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
