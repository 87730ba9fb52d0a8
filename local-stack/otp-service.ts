// The OTP service as the local stack runs it: a CA and certificate, a store token and a
// sealing key under the state directory (kept across restarts), and `node dist/otp-server/main.js`.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';
import { ensureCa, ensureCert } from './pki.js';
import { freePort } from './ports.js';
import { spawnManaged, waitFor, type ManagedProcess } from './process.js';

export interface OtpService {
  process: ManagedProcess;
  url: string;
  /** What a worker needs to use it (HOSTFLOW_OTP_*). */
  workerEnv: Record<string, string>;
  /** The files it serves with; replacing them rotates them (the service reloads them). */
  files: OtpServiceFiles;
  stop(): Promise<void>;
}

export interface OtpServiceFiles {
  /** The CA the worker trusts and builds get as `otp-ca`. */
  caCert: string;
  tlsCert: string;
  tlsKey: string;
  storeToken: string;
}

export interface OtpServiceOptions {
  /** Start it again whenever it exits (kill -9 tests, `hostflow start`). */
  restart?: boolean;
  stateDir: string;
  kubeconfig: string;
  /** Namespace for its records: its own, not the engine's (the caller creates it). */
  namespace: string;
  port?: number;
  /**
   * Where it listens (default 127.0.0.1): the local node's address (kubelet.ts, nodeAddress) for
   * build pods to redeem there, as they do in a cluster.
   */
  address?: string;
  /** host:port for its /metrics endpoint. */
  metricsAddress?: string;
  logFile?: string;
}

/** How to run the OTP service: its files made, its command, environment and address decided. */
export interface OtpServicePlan {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  url: string;
  /** What a worker needs to use it (HOSTFLOW_OTP_*). */
  workerEnv: Record<string, string>;
  files: OtpServiceFiles;
  /** In its output once it serves. */
  readyLine: string;
}

/** Makes the CA, certificate, store token and sealing key (kept across restarts), and the plan. */
export async function planOtpService(options: OtpServiceOptions): Promise<OtpServicePlan> {
  const dir = options.stateDir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = await ensureCa(join(dir, 'pki'), 'hostflow OTP CA');
  const address = options.address ?? '127.0.0.1';
  const cert = await ensureCert(ca, 'otp-server', {
    cn: 'hostflow-otp',
    ips: [...new Set(['127.0.0.1', address])],
    dns: ['localhost'],
  });
  const storeTokenFile = secretFile(join(dir, 'store-token'), () =>
    randomBytes(32).toString('base64url'),
  );
  const sealingKeyFile = secretFile(join(dir, 'sealing-key'), () =>
    randomBytes(32).toString('base64'),
  );
  const port = options.port ?? (await freePort(address));
  const url = `https://${address}:${port}`;
  return {
    command: process.execPath,
    args: ['--enable-source-maps', join(REPO_ROOT, 'dist/otp-server/main.js')],
    env: {
      ...process.env,
      KUBECONFIG: options.kubeconfig,
      HOSTFLOW_OTP_NAMESPACE: options.namespace,
      HOSTFLOW_OTP_LISTEN: `${address}:${port}`,
      HOSTFLOW_OTP_TLS_CERT_FILE: cert.cert,
      HOSTFLOW_OTP_TLS_KEY_FILE: cert.key,
      HOSTFLOW_OTP_STORE_TOKEN_FILE: storeTokenFile,
      HOSTFLOW_OTP_SEALING_KEY_FILE: sealingKeyFile,
      ...(options.metricsAddress ? { HOSTFLOW_METRICS_ADDRESS: options.metricsAddress } : {}),
    },
    url,
    workerEnv: {
      HOSTFLOW_OTP_URL: url,
      HOSTFLOW_OTP_CA_FILE: ca.cert,
      HOSTFLOW_OTP_STORE_TOKEN_FILE: storeTokenFile,
    },
    files: { caCert: ca.cert, tlsCert: cert.cert, tlsKey: cert.key, storeToken: storeTokenFile },
    readyLine: 'listening on',
  };
}

/** Starts the OTP service, restarted when it exits if `restart` is set. */
export async function startOtpService(options: OtpServiceOptions): Promise<OtpService> {
  const plan = await planOtpService(options);
  const proc = spawnManaged('otp-server', plan.command, plan.args, {
    env: plan.env,
    logFile: options.logFile,
    restart: options.restart,
  });
  try {
    await waitFor(
      'otp-server to listen',
      () => (proc.tail(50).includes(plan.readyLine) ? true : undefined),
      { process: proc },
    );
  } catch (err) {
    await proc.stop();
    throw new Error(`otp-server: could not start: ${(err as Error).message}`, { cause: err });
  }
  return {
    process: proc,
    url: plan.url,
    workerEnv: plan.workerEnv,
    files: plan.files,
    stop: () => proc.stop(),
  };
}

function secretFile(path: string, make: () => string): string {
  if (!existsSync(path)) writeFileSync(path, `${make()}\n`, { mode: 0o600 });
  return path;
}
