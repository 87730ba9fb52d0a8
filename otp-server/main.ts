// The OTP service process: serves HTTPS until SIGINT/SIGTERM, sweeping expired records
// meanwhile. Records live as Secrets in a namespace of their own (HOSTFLOW_OTP_NAMESPACE), so
// any number of replicas share them, a restart loses none, and the service's account needs no
// rights in the engine namespace, where admin keys and cloud credentials are.
import { CoreV1Api } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Counter, Histogram } from 'prom-client';
import { createLogger, lineLog, type LineLog, type Logger } from '../runtime/logger.js';
import { createRegistry, serveMetrics } from '../runtime/metrics-server.js';
import { kubeConfig, loadSettings, parseEnv } from '../runtime/settings.js';
import { DEFAULT_OTP_NAMESPACE } from '../platform-config/contract.js';
import { createSealer, readSealingKey } from './sealing.js';
import { startOtpServer } from './server.js';
import { errorGist, KubeOtpStore, type OtpStore } from './store.js';

const seconds = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const file = z.string().min(1, 'must name a file');

const OtpEnvSchema = z.object({
  /** The namespace of its records, and the only one its account may read. */
  HOSTFLOW_OTP_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a Kubernetes namespace name')
    .max(63, 'must be a Kubernetes namespace name (63 characters at most)')
    .default(DEFAULT_OTP_NAMESPACE),
  /** host:port to listen on. */
  HOSTFLOW_OTP_LISTEN: z
    .string()
    .regex(/^(\[[0-9a-fA-F:]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port, e.g. 0.0.0.0:8443')
    .default('0.0.0.0:8443'),
  HOSTFLOW_OTP_TLS_CERT_FILE: file,
  HOSTFLOW_OTP_TLS_KEY_FILE: file,
  /** The bearer token /store callers must present. */
  HOSTFLOW_OTP_STORE_TOKEN_FILE: file,
  /** 32 bytes, raw or base64: seals keys at rest. Every replica needs the same one. */
  HOSTFLOW_OTP_SEALING_KEY_FILE: file,
  HOSTFLOW_OTP_TTL_SECONDS: seconds(1, 86_400).default(1200),
  HOSTFLOW_OTP_SWEEP_SECONDS: seconds(1, 86_400).default(60),
  /** How often the certificate and token files are checked for rotation. */
  HOSTFLOW_OTP_RELOAD_SECONDS: seconds(1, 3600).default(5),
  /**
   * Redemptions per second per client address, after a burst: a build redeems once, so a
   * client far above this is guessing, and each redemption costs an API-server read.
   */
  HOSTFLOW_OTP_REDEEM_PER_SECOND: z.coerce.number().positive().max(10_000).default(2),
  HOSTFLOW_OTP_REDEEM_BURST: z.coerce.number().int().min(1).max(100_000).default(20),
});

export type OtpSettings = z.infer<typeof OtpEnvSchema>;

/** The environment variables the OTP service reads besides the shared ones (SETTING_NAMES). */
export const OTP_SETTING_NAMES: readonly string[] = Object.keys(OtpEnvSchema.shape);

export function loadOtpSettings(env: NodeJS.ProcessEnv = process.env): OtpSettings {
  return parseEnv(OtpEnvSchema, env, 'OTP server settings');
}

/** Deletes expired records now and every `intervalMs`, one sweep at a time. */
function startSweeper(store: OtpStore, intervalMs: number, log: LineLog) {
  let sweeping = false;
  const sweep = (): void => {
    if (sweeping) return;
    sweeping = true;
    store
      .sweep()
      .then(
        (n) => n > 0 && log(`swept ${n} expired OTP record(s)`),
        (err) => log(`sweep failed: ${errorGist(err)}`, 'warn'),
      )
      .finally(() => (sweeping = false));
  };
  sweep();
  const timer = setInterval(sweep, intervalMs);
  return { stop: () => clearInterval(timer) };
}

async function main(logger: Logger): Promise<void> {
  const base = loadSettings(); // KUBECONFIG, HOSTFLOW_KUBE_CONTEXT, HOSTFLOW_METRICS_ADDRESS
  const settings = loadOtpSettings();
  const log = lineLog(logger);
  const sealer = createSealer(readSealingKey(settings.HOSTFLOW_OTP_SEALING_KEY_FILE));
  const kc = kubeConfig(base);
  const store = new KubeOtpStore(
    kc.makeApiClient(CoreV1Api),
    settings.HOSTFLOW_OTP_NAMESPACE,
    sealer,
  );
  const registry = createRegistry('otp-server');
  const requests = new Histogram({
    name: 'hostflow_otp_request_seconds',
    help: 'OTP service requests by route and status',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'hostflow_otp_rate_limited_total',
    help: 'OTP redemptions refused (429) because their client address exceeded its rate limit',
    registers: [registry],
  });
  const split = settings.HOSTFLOW_OTP_LISTEN.lastIndexOf(':');
  const server = await startOtpServer({
    host: settings.HOSTFLOW_OTP_LISTEN.slice(0, split).replace(/^\[|\]$/g, ''),
    port: Number(settings.HOSTFLOW_OTP_LISTEN.slice(split + 1)),
    tls: {
      certFile: settings.HOSTFLOW_OTP_TLS_CERT_FILE,
      keyFile: settings.HOSTFLOW_OTP_TLS_KEY_FILE,
    },
    storeTokenFile: settings.HOSTFLOW_OTP_STORE_TOKEN_FILE,
    store,
    ttlSeconds: settings.HOSTFLOW_OTP_TTL_SECONDS,
    reloadIntervalMs: settings.HOSTFLOW_OTP_RELOAD_SECONDS * 1000,
    log,
    redeemRate: {
      perSecond: settings.HOSTFLOW_OTP_REDEEM_PER_SECOND,
      burst: settings.HOSTFLOW_OTP_REDEEM_BURST,
    },
    onRateLimited: () => rateLimited.inc(),
    observe: (route, status, seconds) => requests.observe({ route, status }, seconds),
  });
  const metricsServer = base.HOSTFLOW_METRICS_ADDRESS
    ? await serveMetrics(registry, base.HOSTFLOW_METRICS_ADDRESS)
    : undefined;
  const sweeper = startSweeper(store, settings.HOSTFLOW_OTP_SWEEP_SECONDS * 1000, log);
  store.ready().catch((err) => log(`store not reachable yet: ${errorGist(err)}`, 'warn'));
  log(
    `listening on ${server.url} (redeem ${server.url}/otp), records in namespace ${settings.HOSTFLOW_OTP_NAMESPACE}, sealing key ${sealer.keyId}`,
  );

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: draining`);
    sweeper.stop();
    metricsServer?.close();
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const logger = createLogger('otp-server');
  main(logger).catch((err) => {
    logger.error(`hostflow otp-server: ${(err as Error).message}`);
    process.exit(1);
  });
}
