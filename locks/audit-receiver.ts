// The lock-audit process: receives the API server's audit events over HTTPS (its audit webhook,
// deploy/locks/audit-policy.yaml), counts Lock denials per namespace and Lock
// (hostflow_lock_denials_total), and writes them into each Lock's status. It also keeps every
// Lock's Enforced condition true to the facts. Enforcement itself never depends on it: the
// API server enforces Locks alone; this only observes.
import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { AdmissionregistrationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { Counter } from 'prom-client';
import { z } from 'zod';
import { LockDenials } from './denials.js';
import { LockStatusWriter } from './status.js';
import { LockWatch } from './watch.js';
import { readLimited } from '../runtime/http-body.js';
import { watchFiles } from '../runtime/watched-files.js';
import { innermostMessage } from '../shared/failures.js';
import { createLogger, lineLog, type Logger } from '../runtime/logger.js';
import { createRegistry, serveMetrics } from '../runtime/metrics-server.js';
import { kubeConfig, loadSettings } from '../runtime/settings.js';

const file = z.string().min(1, 'must name a file');
const LockAuditEnv = z.object({
  HOSTFLOW_LOCK_AUDIT_LISTEN: z
    .string()
    .regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port, e.g. 0.0.0.0:8444')
    .default('0.0.0.0:8444'),
  HOSTFLOW_LOCK_AUDIT_TLS_CERT_FILE: file,
  HOSTFLOW_LOCK_AUDIT_TLS_KEY_FILE: file,
  /** The bearer token the API server's audit webhook kubeconfig sends. */
  HOSTFLOW_LOCK_AUDIT_TOKEN_FILE: file,
});

/** Audit batches are a few hundred events of metadata: far below this. */
const MAX_BATCH_BYTES = 32 * 1024 * 1024;
const RELOAD_MS = 10_000;
const digest = (value: string | Buffer): Buffer => createHash('sha256').update(value).digest();

async function main(log: Logger): Promise<void> {
  const parsed = LockAuditEnv.safeParse(process.env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid lock-audit settings in the environment:\n${lines.join('\n')}`);
  }
  const env = parsed.data;
  const settings = loadSettings();
  const kc = kubeConfig(settings);
  const registry = createRegistry('lock-audit');
  const denialsTotal = new Counter({
    name: 'hostflow_lock_denials_total',
    help: 'Requests refused because of a Lock, by namespace and Lock (from the audit webhook)',
    labelNames: ['namespace', 'lock'],
    registers: [registry],
  });
  const batches = new Counter({
    name: 'hostflow_lock_audit_batches_total',
    help: 'Audit event batches received from the API server, by result',
    labelNames: ['result'],
    registers: [registry],
  });
  const metricsServer = settings.HOSTFLOW_METRICS_ADDRESS
    ? await serveMetrics(registry, settings.HOSTFLOW_METRICS_ADDRESS)
    : undefined;
  const status = new LockStatusWriter({
    custom: kc.makeApiClient(CustomObjectsApi),
    core: kc.makeApiClient(CoreV1Api),
    admission: kc.makeApiClient(AdmissionregistrationV1Api),
  });
  const watch = new LockWatch({
    kubeConfig: kc,
    custom: kc.makeApiClient(CustomObjectsApi),
    status,
    resyncMs: settings.HOSTFLOW_RESYNC_SECONDS * 1000,
    log: lineLog(log),
  });
  const denials = new LockDenials();

  const server: Server = createServer({ minVersion: 'TLSv1.2' });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  const tls = watchFiles(
    [env.HOSTFLOW_LOCK_AUDIT_TLS_CERT_FILE, env.HOSTFLOW_LOCK_AUDIT_TLS_KEY_FILE],
    RELOAD_MS,
    ([cert, key]) => server.setSecureContext({ cert, key }),
    (err) => log.warn(`lock-audit: tls certificate not reloaded: ${err.message}`),
  );
  let tokenDigest: Buffer = Buffer.alloc(0);
  const token = watchFiles(
    [env.HOSTFLOW_LOCK_AUDIT_TOKEN_FILE],
    RELOAD_MS,
    ([content]) => {
      const value = content!.toString('utf8').trim();
      if (value.length < 16) throw new Error(`${env.HOSTFLOW_LOCK_AUDIT_TOKEN_FILE}: too short`);
      tokenDigest = digest(value);
    },
    (err) => log.warn(`lock-audit: token not reloaded: ${err.message}`),
  );
  const authorized = (req: IncomingMessage): boolean => {
    const match = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), tokenDigest);
  };

  const reply = (res: ServerResponse, code: number, body: string): void => {
    res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`${body}\n`);
  };
  const receive = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '').split('?')[0]; // the API server adds ?timeout=
    if (path === '/healthz') return reply(res, 200, 'ok');
    if (path !== '/audit') return reply(res, 404, 'not found: POST audit events to /audit');
    if (req.method !== 'POST') return reply(res, 405, 'POST an audit.k8s.io/v1 EventList');
    if (!authorized(req)) return reply(res, 401, 'missing or wrong bearer token');
    const body = await readLimited(req, MAX_BATCH_BYTES);
    if (body === 'too-large') return reply(res, 413, `batch larger than ${MAX_BATCH_BYTES} bytes`);
    let found;
    try {
      found = denials.read(JSON.parse(body.toString('utf8')));
    } catch (err) {
      batches.inc({ result: 'invalid' });
      return reply(res, 400, `not an audit EventList: ${innermostMessage(err)}`);
    }
    for (const d of found) denialsTotal.inc({ namespace: d.namespace, lock: d.lock });
    batches.inc({ result: 'ok' });
    // Counted now; the API server is not kept waiting for the status writes.
    reply(res, 200, `${found.length} lock denials`);
    if (found.length > 0) {
      await status.recordDenials(found).catch((err: unknown) => {
        log.warn(`lock-audit: Lock status not written: ${innermostMessage(err)}`);
      });
    }
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    receive(req, res).catch((err: unknown) => {
      log.error(`lock-audit: ${innermostMessage(err)}`);
      if (!res.headersSent) reply(res, 500, 'internal error');
    });
  });
  const [host, port] = [
    env.HOSTFLOW_LOCK_AUDIT_LISTEN.slice(0, env.HOSTFLOW_LOCK_AUDIT_LISTEN.lastIndexOf(':')),
    Number(
      env.HOSTFLOW_LOCK_AUDIT_LISTEN.slice(env.HOSTFLOW_LOCK_AUDIT_LISTEN.lastIndexOf(':') + 1),
    ),
  ];
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  watch.start();
  log.info(
    `hostflow lock-audit receiving audit events on https://${env.HOSTFLOW_LOCK_AUDIT_LISTEN}/audit`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  tls.stop();
  token.stop();
  await watch.stop();
  await new Promise((resolve) => server.close(resolve));
  metricsServer?.close();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const log = createLogger('lock-audit');
  main(log).catch((err) => {
    log.error(`hostflow lock-audit: ${(err as Error).message}`);
    process.exit(1);
  });
}
