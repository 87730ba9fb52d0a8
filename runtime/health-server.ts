// GET /healthz (liveness) and GET /readyz (readiness) for the Deployments' probes. Each check
// answers undefined when healthy or the reason it is not, which the probe's body then shows.
import { createServer, type Server } from 'node:http';
import { withDeadline } from '../shared/deadline.js';

export interface HealthChecks {
  /** Is the process still doing its job? A failure makes the kubelet restart it. */
  live(): Promise<string | undefined> | string | undefined;
  /** Can it serve now? A failure only takes it out of rotation until it recovers. */
  ready(): Promise<string | undefined> | string | undefined;
  /** What readiness adds in its answer, ready or not: a part it chose not to serve, and why. */
  notes?(): string[];
}

const CHECK_TIMEOUT_MS = 4_000;

export async function serveHealth(checks: HealthChecks, address: string): Promise<Server> {
  const split = address.lastIndexOf(':');
  const server = createServer((req, res) => {
    const check =
      req.url === '/healthz' ? checks.live : req.url === '/readyz' ? checks.ready : undefined;
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !check) {
      res
        .writeHead(404, { 'Content-Type': 'text/plain' })
        .end('not found: GET /healthz or GET /readyz\n');
      return;
    }
    const notes = check === checks.ready ? (checks.notes?.() ?? []) : [];
    const text = (first: string) => [first, ...notes].map((line) => `${line}\n`).join('');
    withDeadline(
      Promise.resolve().then(() => check.call(checks)),
      CHECK_TIMEOUT_MS,
      `check did not answer within ${CHECK_TIMEOUT_MS} ms`,
    ).then(
      (problem) =>
        res
          .writeHead(problem ? 503 : 200, { 'Content-Type': 'text/plain' })
          .end(text(problem ?? 'ok')),
      (err: Error) => res.writeHead(503, { 'Content-Type': 'text/plain' }).end(`${err.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`health endpoint ${address}: ${err.message}`)));
    server.listen(Number(address.slice(split + 1)), address.slice(0, split), resolve);
  });
  return server;
}
