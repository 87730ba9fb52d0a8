// A /metrics endpoint for processes that keep their own Prometheus registry (bridge, OTP
// service). The worker's metrics come from the Temporal runtime's own exporter instead.
import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';

export function createRegistry(processName: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ process: processName });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Serves `registry` on http://<address>/metrics until closed. */
export async function serveMetrics(registry: Registry, address: string): Promise<Server> {
  const split = address.lastIndexOf(':');
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res
        .writeHead(404, { 'Content-Type': 'text/plain' })
        .end('not found: metrics are at GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body),
      (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${err.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`metrics endpoint ${address}: ${err.message}`)));
    server.listen(Number(address.slice(split + 1)), address.slice(0, split), resolve);
  });
  return server;
}
