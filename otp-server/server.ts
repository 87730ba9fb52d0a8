// The HTTPS OTP service. Two endpoints carry secrets:
//   POST /store  (Bearer token) body = a private key  → 201, body = a one-time token
//   POST /otp    body = the token (as `curl -d @otp` sends it) → 200, body = the key, once;
//                429 with Retry-After when the client redeems faster than its rate limit
// plus GET /healthz and GET /readyz. Every other request gets a short plain-text 4xx. Bodies are
// bounded, the TLS certificate and the store token are re-read when their files change, and
// the log has one line per request (method, route, status, duration), never a body.
import { createHash, timingSafeEqual, X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext } from 'node:tls';
import { discardRest, readLimited } from '../runtime/http-body.js';
import { statusCode, transportFailure } from '../shared/kube-errors.js';
import { createRateLimiter, type RateLimitSettings } from './rate-limit.js';
import { errorGist, TOKEN_PATTERN, type OtpStore } from './store.js';
import { watchFiles, type WatchedFiles } from '../runtime/watched-files.js';
import type { LineLog } from '../runtime/logger.js';

export const MAX_KEY_BYTES = 16 * 1024;
const MAX_OTP_BYTES = 1024;
const PRIVATE_KEY =
  /^-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----\r?\n[\s\S]+\r?\n-----END ([A-Z0-9]+ )*PRIVATE KEY-----\s*$/;

export interface OtpServerOptions {
  host: string;
  port: number;
  tls: { certFile: string; keyFile: string };
  /** Holds the bearer token that /store callers must present. */
  storeTokenFile: string;
  store: OtpStore;
  ttlSeconds: number;
  reloadIntervalMs: number;
  log: LineLog;
  /** Redemptions per client address (the socket's peer: headers are the client's to forge). */
  redeemRate: RateLimitSettings;
  /** Called for each redemption refused by the rate limit, for metrics. */
  onRateLimited?: () => void;
  /** Called once per finished request, for metrics (route is `(other)` for unknown paths). */
  observe?: (route: string, status: string, seconds: number) => void;
}

export interface OtpServer {
  /** Base URL, e.g. https://127.0.0.1:8443 (the redeem URL is this + /otp). */
  readonly url: string;
  readonly port: number;
  close(graceMs?: number): Promise<void>;
}

interface Reply {
  status: number;
  body: string | Buffer;
  headers?: Record<string, string>;
}

const text = (status: number, body: string, headers?: Record<string, string>): Reply => ({
  status,
  body: `${body}\n`,
  headers,
});

type ReadBody = (limit: number) => Promise<Buffer | 'too-large'>;
interface Route {
  methods: string[];
  handle(req: IncomingMessage, readBody: ReadBody): Promise<Reply>;
}

const digest = (value: string | Buffer): Buffer => createHash('sha256').update(value).digest();

export async function startOtpServer(options: OtpServerOptions): Promise<OtpServer> {
  const { store, log } = options;
  const server: Server = createServer({ minVersion: 'TLSv1.2' });
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 5_000;

  const watched: WatchedFiles[] = [];
  watched.push(
    watchFiles(
      [options.tls.certFile, options.tls.keyFile],
      options.reloadIntervalMs,
      ([cert, key]) => {
        createSecureContext({ cert, key }); // throws on a mismatched pair: keep the old one
        server.setSecureContext({ cert, key });
        log(`tls certificate loaded (serial ${new X509Certificate(cert!).serialNumber})`);
      },
      (err) =>
        log(`tls certificate not reloaded, keeping the previous one: ${err.message}`, 'warn'),
    ),
  );
  let storeTokenDigest: Buffer = Buffer.alloc(0);
  watched.push(
    watchFiles(
      [options.storeTokenFile],
      options.reloadIntervalMs,
      ([content]) => {
        const token = content!.toString('utf8').trim();
        if (token.length < 16) throw new Error(`${options.storeTokenFile}: store token too short`);
        storeTokenDigest = digest(token);
      },
      (err) => log(`store token not reloaded, keeping the previous one: ${err.message}`, 'warn'),
    ),
  );

  const authorized = (req: IncomingMessage): boolean => {
    const match = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), storeTokenDigest);
  };

  const redeemLimit = createRateLimiter(options.redeemRate);
  const routes: Record<string, Route> = {
    '/otp': {
      methods: ['POST'],
      async handle(req, readBody) {
        // First, before the body or the store: a refused request costs no API-server read.
        const wait = redeemLimit.take(req.socket.remoteAddress ?? '');
        if (wait > 0) {
          options.onRateLimited?.();
          return text(429, 'too many OTP redemptions from this address, retry later', {
            'Retry-After': String(wait),
          });
        }
        const body = await readBody(MAX_OTP_BYTES);
        if (body === 'too-large') return text(413, 'OTP too long');
        const token = body.toString('latin1').trim();
        if (!token) return text(400, 'empty body: POST the OTP');
        if (!TOKEN_PATTERN.test(token)) return text(400, 'malformed OTP');
        const key = await store.redeem(token);
        if (!key) return text(404, 'unknown, expired or already used OTP');
        return { status: 200, body: key, headers: { 'Content-Type': 'text/plain' } };
      },
    },
    '/store': {
      methods: ['POST'],
      async handle(req, readBody) {
        if (!authorized(req)) {
          return text(401, 'missing or wrong bearer token', { 'WWW-Authenticate': 'Bearer' });
        }
        const body = await readBody(MAX_KEY_BYTES);
        if (body === 'too-large') return text(413, `key larger than ${MAX_KEY_BYTES} bytes`);
        if (body.length === 0) return text(400, 'empty body: POST the private key');
        if (!PRIVATE_KEY.test(body.toString('latin1'))) {
          return text(400, 'body must be a PEM or OpenSSH private key');
        }
        const token = await store.issue(body, new Date(Date.now() + options.ttlSeconds * 1000));
        return { status: 201, body: token, headers: { 'Content-Type': 'text/plain' } };
      },
    },
    '/healthz': { methods: ['GET', 'HEAD'], handle: async () => text(200, 'ok') },
    '/readyz': {
      methods: ['GET', 'HEAD'],
      async handle() {
        try {
          await store.ready();
          return text(200, 'ready');
        } catch (err) {
          log(`not ready: ${errorGist(err)}`, 'warn');
          return text(503, 'OTP store unreachable');
        }
      },
    },
  };

  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
    expectsContinue: boolean,
  ): Promise<void> => {
    const started = performance.now();
    const path = (req.url ?? '').split('?')[0]!;
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
    // Only known routes are logged by name: an unknown path could carry anything.
    const logged = route ? path : '(other)';
    res.on('close', () => {
      const status = res.writableFinished ? res.statusCode : `${res.statusCode}-aborted`;
      const elapsed = performance.now() - started;
      log(`${req.method} ${logged} ${status} ${elapsed.toFixed(1)}ms`);
      options.observe?.(logged, String(status), elapsed / 1000);
    });
    let continued = !expectsContinue;
    const readBody: ReadBody = (limit) => {
      const declared = Number(req.headers['content-length'] ?? 0);
      if (declared > limit) return Promise.resolve('too-large');
      if (!continued) {
        res.writeContinue();
        continued = true;
      }
      return readLimited(req, limit);
    };
    let reply: Reply;
    try {
      if (!route) reply = text(404, 'not found');
      else if (!route.methods.includes(req.method ?? '')) {
        reply = text(405, 'method not allowed', { Allow: route.methods.join(', ') });
      } else reply = await route.handle(req, readBody);
    } catch (err) {
      log(`${req.method} ${logged} failed: ${errorGist(err)}`, 'warn');
      // The store's Kubernetes API answered with an error, or did not answer at all.
      reply =
        statusCode(err) !== undefined || transportFailure(err) !== undefined
          ? text(503, 'OTP store unavailable, retry')
          : text(500, 'internal error');
    }
    // The client was told to wait for a 100 Continue it will not get: it must not send the body.
    if (!continued) res.setHeader('Connection', 'close');
    res.writeHead(reply.status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      ...reply.headers,
      'Content-Length': String(Buffer.byteLength(reply.body)),
    });
    res.end(reply.body);
    if (continued) discardRest(req);
  };
  const onRequest = (expectsContinue: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res, expectsContinue).catch((err) => {
      log(`request handling failed: ${errorGist(err)}`, 'error');
      res.destroy();
    });
  };
  server.on('request', onRequest(false));
  server.on('checkContinue', onRequest(true));
  // Not HTTP, headers too large, too slow: answer once and close, politely (no reset).
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const [status, reason] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout']
          : [400, 'Bad Request'];
    log(`- (unparsable) ${status} ${err.code ?? 'error'}`);
    if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy();
    const body = `${reason.toLowerCase()}\n`;
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `https://${host}:${port}`,
    port,
    async close(graceMs = 5000) {
      for (const w of watched) w.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(force);
    },
  };
}
